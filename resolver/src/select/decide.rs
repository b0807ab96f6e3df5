//! Choosing one backend among those offered for one version: check each against the machine,
//! order the usable ones by preference, and explain every other.

use serde::{Deserialize, Serialize};

use crate::backend::{Backend, BackendKind};
use crate::catalog::{Catalog, Release};
use crate::machine::{Machine, Platform};

use super::check::check;
use super::reason::{OutrankedBecause, Rejection, kind_name};

/// How a site wants selection to lean.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Policy {
    /// Serve exactly this backend (like `download.pytorch.org/whl/<backend>/`), whatever the probes
    /// say. A version not built for it gets no files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pinned: Option<Backend>,
    /// Backends to rank first within their family when usable, in this order (a site may prefer
    /// `cu128` over `cu130`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub prefer: Vec<Backend>,
}

/// One backend offered for a version, and whether the index has a file of it for the machine's
/// platform.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Offer {
    /// The offered backend.
    pub backend: Backend,
    /// Whether the index has a file of it for the machine's OS and CPU.
    pub has_platform_file: bool,
}

/// What happened to one offered backend.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Considered {
    /// The offered backend.
    pub backend: Backend,
    /// `None` for the chosen backend.
    pub rejection: Option<Rejection>,
}

impl Considered {
    /// The verdict in one word, as explanations show it: `chosen`, `usable` (runs here, lost on
    /// preference) or `rejected` (does not run here, or has no file for this platform).
    pub fn verdict(&self) -> &'static str {
        match &self.rejection {
            None => "chosen",
            Some(rejection) if rejection.is_usable() => "usable",
            Some(_) => "rejected",
        }
    }
}

impl std::fmt::Display for Considered {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.rejection {
            None => write!(f, "{}: chosen", self.backend),
            Some(rejection) => write!(f, "{}: {rejection}", self.backend),
        }
    }
}

/// The choice for one version, with every offered backend accounted for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    /// The backend to install; `None` when none of the offered ones runs here or the pinned one
    /// is not offered.
    pub chosen: Option<Backend>,
    /// Every offered backend, the chosen one first, then in preference order.
    pub considered: Vec<Considered>,
    /// Things the user should know: inferred rules, a GPU no build can use, a pin that overrode
    /// the probes.
    pub notes: Vec<String>,
}

impl Decision {
    /// The rejected backends with their reasons.
    pub fn rejections(&self) -> impl Iterator<Item = (&Backend, &Rejection)> {
        self.considered
            .iter()
            .filter_map(|c| c.rejection.as_ref().map(|r| (&c.backend, r)))
    }
}

/// Chooses among `offers` for a version of `release` on `machine`.
pub fn decide(
    catalog: &Catalog,
    machine: &Machine,
    policy: &Policy,
    release: &Release,
    offers: &[Offer],
) -> Decision {
    let platform = machine.platform;
    let mut notes = Vec::new();
    let mut usable: Vec<Backend> = Vec::new();
    let mut rejected: Vec<Considered> = Vec::new();
    for offer in offers {
        if !offer.has_platform_file {
            rejected.push(Considered {
                backend: offer.backend.clone(),
                rejection: Some(Rejection::NoFileForPlatform { platform }),
            });
            continue;
        }
        let rules = catalog.backend_rules(release, &offer.backend, platform);
        // What was assumed is said whether the build was kept or rejected: a rejection on an
        // inferred list is only as good as the assumption.
        notes.extend(
            rules
                .inferred
                .iter()
                .map(|i| format!("{}: {i}", offer.backend)),
        );
        match check(machine, &rules) {
            Ok(check_notes) => {
                usable.push(offer.backend.clone());
                notes.extend(
                    check_notes
                        .into_iter()
                        .map(|n| format!("{}: {n}", offer.backend)),
                );
            }
            Err(rejection) => rejected.push(Considered {
                backend: offer.backend.clone(),
                rejection: Some(rejection),
            }),
        }
    }
    let classes = class_order(machine);
    usable.sort_by_key(|b| preference_key(&classes, policy, b));
    usable.dedup();
    notes.dedup();

    let chosen = if let Some(pinned) = &policy.pinned {
        let offered = offers
            .iter()
            .any(|o| &o.backend == pinned && o.has_platform_file);
        if offered
            && !usable.contains(pinned)
            && let Some(reason) = rejected
                .iter()
                .find(|c| &c.backend == pinned)
                .and_then(|c| c.rejection.as_ref())
        {
            notes.push(format!(
                "{pinned} is pinned although the probes say it will not run here: {reason}"
            ));
        }
        offered.then(|| pinned.clone())
    } else {
        usable.first().cloned()
    };

    let mut considered = Vec::new();
    if let Some(chosen) = &chosen {
        considered.push(Considered {
            backend: chosen.clone(),
            rejection: None,
        });
    }
    for backend in usable.iter().filter(|b| Some(*b) != chosen.as_ref()) {
        let rejection = match (&policy.pinned, &chosen) {
            (Some(pinned), _) => Rejection::NotPinned {
                pinned: pinned.clone(),
            },
            (None, Some(by)) => Rejection::Outranked {
                by: by.clone(),
                why: outranked_because(policy, by, backend),
            },
            (None, None) => unreachable!("a usable backend exists, so one was chosen"),
        };
        considered.push(Considered {
            backend: backend.clone(),
            rejection: Some(rejection),
        });
    }
    // A pinned backend the probes rejected is already listed, as chosen.
    considered.extend(
        rejected
            .into_iter()
            .filter(|entry| chosen.as_ref() != Some(&entry.backend)),
    );
    explain_unusable_gpu(machine, chosen.as_ref(), &considered, &mut notes, release);
    Decision {
        chosen,
        considered,
        notes,
    }
}

fn outranked_because(policy: &Policy, by: &Backend, loser: &Backend) -> OutrankedBecause {
    if by.kind() != loser.kind() {
        OutrankedBecause::DeviceClass
    } else if policy.prefer.contains(by) {
        OutrankedBecause::SitePreference
    } else {
        OutrankedBecause::Newer
    }
}

/// Sort key, smallest first: the accelerator class of the machine's best device first (discrete
/// before integrated), CPU last; within a class the site's preferences, then the newest.
fn preference_key(
    classes: &[BackendKind],
    policy: &Policy,
    backend: &Backend,
) -> (usize, usize, std::cmp::Reverse<Backend>) {
    let class_rank = classes
        .iter()
        .position(|k| *k == backend.kind())
        .unwrap_or(classes.len());
    let site_rank = policy
        .prefer
        .iter()
        .position(|b| b == backend)
        .unwrap_or(policy.prefer.len());
    (class_rank, site_rank, std::cmp::Reverse(backend.clone()))
}

/// The accelerator classes of the machine's devices, best first: discrete devices before
/// integrated ones, NVIDIA, AMD, Intel within each; CPU last.
pub fn class_order(machine: &Machine) -> Vec<BackendKind> {
    let mut devices: Vec<(bool, BackendKind)> = Vec::new();
    devices.extend(
        machine
            .nvidia_gpus()
            .iter()
            .map(|g| (g.integrated, BackendKind::Cuda)),
    );
    devices.extend(
        machine
            .amd_gpus_in_use()
            .iter()
            .map(|g| (g.integrated, BackendKind::Rocm)),
    );
    devices.extend(
        machine
            .xpu_gpus()
            .iter()
            .map(|g| (g.integrated, BackendKind::Xpu)),
    );
    devices.sort_by_key(|(integrated, kind)| (*integrated, *kind));
    let mut order: Vec<BackendKind> = Vec::new();
    for (_, kind) in devices {
        if !order.contains(&kind) {
            order.push(kind);
        }
    }
    order.push(BackendKind::Cpu);
    order
}

/// Never an unrunnable build silently: when the machine has an accelerator that no offered build
/// can use, say so.
fn explain_unusable_gpu(
    machine: &Machine,
    chosen: Option<&Backend>,
    considered: &[Considered],
    notes: &mut Vec<String>,
    release: &Release,
) {
    let chosen_kind = chosen.map(Backend::kind);
    for kind in class_order(machine) {
        if kind == BackendKind::Cpu || chosen_kind == Some(kind) {
            continue;
        }
        let offered_of_kind = considered
            .iter()
            .filter(|c| c.backend.kind() == kind)
            .count();
        let usable_of_kind = considered
            .iter()
            .filter(|c| {
                c.backend.kind() == kind && c.rejection.as_ref().is_none_or(Rejection::is_usable)
            })
            .count();
        if usable_of_kind > 0 {
            continue;
        }
        let device = kind_name(kind);
        let fallback = match chosen {
            Some(Backend::Cpu) => "the CPU build was chosen".to_string(),
            Some(other) => format!("{other} was chosen"),
            None => "no build was chosen".to_string(),
        };
        if offered_of_kind == 0 {
            notes.push(format!("this machine's {device} GPU has no {kind} build of this version (torch {} line) to run; {fallback}", release.torch));
        } else {
            notes.push(format!("this machine's {device} GPU cannot run any {kind} build of this version offered here; {fallback}"));
        }
    }
}

/// The backends the catalog alone offers for a release on a platform, as offers.
pub fn catalog_offers(catalog: &Catalog, release: &Release, platform: Platform) -> Vec<Offer> {
    catalog
        .offered_backends(release, platform)
        .into_iter()
        .map(|backend| Offer {
            backend,
            has_platform_file: true,
        })
        .collect()
}
