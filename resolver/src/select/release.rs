//! Selection from the catalog alone, without an index page: what `wheelgate select` answers
//! offline, and what the scenario tests check.

use pep440_rs::Version;

use crate::catalog::{Catalog, ReleaseLine};
use crate::filename::normalize_name;
use crate::machine::Machine;

use super::decide::{Decision, Policy, catalog_offers, decide};

/// The choice for one project version (or, unpinned, the newest release line) from the catalog.
#[derive(Debug, Clone)]
pub struct ReleaseSelection {
    /// The normalized project name.
    pub project: String,
    /// The torch release line whose rules applied.
    pub torch: ReleaseLine,
    /// The backend chosen and why each other one was rejected.
    pub decision: Decision,
}

/// Chooses the backend for `project` at `version` (the newest confirmed torch line when `None`)
/// from the catalog's build lists.
pub fn select_release(
    catalog: &Catalog,
    machine: &Machine,
    policy: &Policy,
    project: &str,
    version: Option<&Version>,
) -> ReleaseSelection {
    let project = normalize_name(project);
    let (release, inferred) = match version {
        Some(version) => {
            let train = catalog.train_release(&project, version);
            (train.release, train.inferred)
        }
        None => (
            catalog
                .releases()
                .iter()
                .find(|r| !r.inferred)
                .unwrap_or_else(|| catalog.newest_release()),
            None,
        ),
    };
    let offers = catalog_offers(catalog, release, machine.platform);
    let mut decision = decide(catalog, machine, policy, release, &offers);
    if let Some(inferred) = inferred {
        decision.notes.insert(0, inferred.to_string());
        decision.rests_on_inference = true;
    }
    ReleaseSelection {
        project,
        torch: release.torch,
        decision,
    }
}
