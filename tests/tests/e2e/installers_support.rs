//! Steps shared by the `installers_*` tests.

use wheelgate_e2e::installers::imported_version;
use wheelgate_e2e::installers::project::{Project, auth_config};
use wheelgate_e2e::machines::{self, TestMachine};
use wheelgate_e2e::proxy::Proxy;
use wheelgate_e2e::upstream::Upstreams;

use crate::support::version;

/// A server with `[auth]` (`ci` / `s3cret`), whose own machine is an H100.
pub async fn authenticated(upstreams: &Upstreams) -> Proxy {
    let machine = machines::H100.machine();
    Proxy::start_with(upstreams, move |config| {
        config.machine = Some(machine);
        config.auth = auth_config();
    })
    .await
}

/// The project's `.venv` holds `machine`'s torch build and the general upstream's filelock, and
/// its interpreter imports that build.
pub async fn assert_venv_has(project: &Project, machine: TestMachine) {
    let dists = project.installed();
    assert_eq!(version(&dists, "torch"), machine.torch(), "{dists:?}");
    assert_eq!(version(&dists, "filelock"), "3.20.0");
    assert_eq!(
        imported_version(Some(&project.venv_python()), None, "torch").await,
        machine.torch()
    );
}
