//! AMD's device extras in the mirror: a declared machine with AMD GPUs takes a build whose
//! metadata declares `device-*` extras with its gfx targets' extras required (the fetcher
//! reads such metadata with them required, `Fetcher::metadata_for`), or not at all where one of
//! its targets has none, as the server serves it (`wheelgate_server::binding::extras`).

use super::environment::{Build, Environment};
use wheelgate_files::metadata::Metadata;
use wheelgate_server::binding::extras::machine_extras;

/// The device extras a machine environment's GPUs need (one per distinct gfx target).
pub(super) fn device_extras_of(environment: &Environment) -> Vec<String> {
    match &environment.build {
        Build::Machine { machine, .. } => machine_extras(machine),
        Build::Backend(_) | Build::None => Vec::new(),
    }
}

/// Why a version whose build declares device extras cannot run here: none for one of the
/// machine's gfx targets (the server leaves such a build out).
pub(super) fn missing_device_extra(
    environment: &Environment,
    metadata: &Metadata,
) -> Option<String> {
    if metadata.device_extras.is_empty() {
        return None;
    }
    let missing = device_extras_of(environment)
        .into_iter()
        .find(|extra| !metadata.device_extras.contains(extra))?;
    Some(format!(
        "because its build declares device extras ({}), none for this machine's `{missing}`",
        metadata.device_extras.join(", ")
    ))
}
