//! Choosing one backend among those offered for one version: check each against the machine,
//! order the usable ones by preference, and explain every other.

use serde::{Deserialize, Serialize};

use crate::backend::{Backend, BackendKind};
use crate::catalog::{Catalog, Release};
use crate::machine::{Machine, Platform};

use super::check::{Fit, fit};
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
    /// the probes, a GPU build kept as a CPU build of last resort.
    pub notes: Vec<String>,
    /// Set when the chosen backend is a GPU build kept as a CPU build of last resort: the
    /// machine has no GPU of its vendor, so it runs on the CPU alone, and no CPU build or build
    /// that uses one of the machine's GPUs was offered (or it is pinned). Holds what the machine
    /// lacks ([`Rejection::NoNvidiaGpu`], [`Rejection::NoAmdGpu`], ...); a note says it in words.
    pub cpu_last_resort: Option<Rejection>,
    /// Whether an answer rests on an assumption: the release or a judged build is not
    /// described by the catalog, or marked inferred there (the notes say what was assumed).
    pub rests_on_inference: bool,
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
///
/// A build that runs here is chosen by preference (see [`class_order`]). A CUDA, ROCm or XPU
/// build on a machine with no GPU of its vendor runs on the CPU alone: it is kept as a CPU build
/// of last resort, below every build that runs as built, so a version published only as GPU
/// builds (PyPI's torch on Linux) still has a build here. A build that cannot use the machine's
/// GPU of its vendor is rejected, so the installer moves to a version that uses the GPU.
pub fn decide(
    catalog: &Catalog,
    machine: &Machine,
    policy: &Policy,
    release: &Release,
    offers: &[Offer],
) -> Decision {
    let platform = machine.platform;
    let classes = class_order(machine);
    let Judged {
        usable,
        last_resort,
        rejected,
        mut notes,
        assumed,
    } = judge_offers(catalog, machine, policy, release, offers, &classes);
    let no_gpu_of = |backend: &Backend| {
        last_resort
            .iter()
            .find(|(b, _)| b == backend)
            .map(|(_, no_gpu)| no_gpu)
    };

    let chosen = if let Some(pinned) = &policy.pinned {
        let offered = offers
            .iter()
            .any(|o| &o.backend == pinned && o.has_platform_file);
        if offered && let Some(no_gpu) = no_gpu_of(pinned) {
            notes.push(format!(
                "{pinned} is pinned although the probes say it cannot use a GPU here: {no_gpu}, so it will run on the CPU alone"
            ));
        } else if offered
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
        usable
            .first()
            .or_else(|| last_resort.first().map(|(b, _)| b))
            .cloned()
    };
    let cpu_last_resort = chosen.as_ref().and_then(no_gpu_of).cloned();
    if policy.pinned.is_none()
        && let Some(chosen) = &chosen
        && let Some(no_gpu) = &cpu_last_resort
    {
        let nothing_better = if classes.len() > 1 {
            format!("no CPU build for {platform}, nor a build that uses this machine's GPUs")
        } else {
            format!("no CPU build for {platform}")
        };
        notes.push(format!(
            "{chosen}: kept as a CPU build of last resort: {no_gpu}, so its {} code goes unused and it runs on the CPU (this version offers {nothing_better})",
            chosen.kind()
        ));
    }

    // Where the chosen CUDA build runs only by minor-version compatibility, say so: the
    // driver's own CUDA version (what the variant path's properties say) is lower.
    if let Some(chosen) = &chosen
        && cpu_last_resort.is_none()
        && let Some(rule) = super::check::minor_version_compatibility(
            machine,
            &catalog.backend_rules(release, chosen, platform),
        )
    {
        notes.push(format!("{chosen}: {rule}"));
    }
    let considered = account(
        policy,
        chosen.as_ref(),
        cpu_last_resort.is_some(),
        &usable,
        &last_resort,
        rejected,
    );
    explain_unusable_gpu(
        machine,
        chosen.as_ref(),
        cpu_last_resort.is_some(),
        &considered,
        &mut notes,
        release,
    );
    Decision {
        chosen,
        considered,
        notes,
        cpu_last_resort,
        rests_on_inference: assumed || release.inferred,
    }
}

/// The offers of one version judged against the machine.
struct Judged {
    /// Builds that run as built, in preference order.
    usable: Vec<Backend>,
    /// GPU builds that would run on the CPU alone, with what the machine lacks, in preference
    /// order.
    last_resort: Vec<(Backend, Rejection)>,
    /// Builds that do not run here as built, with why, in the order offered: the builds of last
    /// resort too, with what the machine lacks.
    rejected: Vec<Considered>,
    /// What was assumed or is worth showing about the builds.
    notes: Vec<String>,
    /// Whether a build's rules were inferred.
    assumed: bool,
}

fn judge_offers(
    catalog: &Catalog,
    machine: &Machine,
    policy: &Policy,
    release: &Release,
    offers: &[Offer],
    classes: &[BackendKind],
) -> Judged {
    let platform = machine.platform;
    let mut judged = Judged {
        usable: Vec::new(),
        last_resort: Vec::new(),
        rejected: Vec::new(),
        notes: Vec::new(),
        assumed: false,
    };
    for offer in offers {
        if !offer.has_platform_file {
            judged.rejected.push(Considered {
                backend: offer.backend.clone(),
                rejection: Some(Rejection::NoFileForPlatform { platform }),
            });
            continue;
        }
        let rules = catalog.backend_rules(release, &offer.backend, platform);
        judged.assumed |= !rules.inferred.is_empty();
        // What was assumed is said whether the build was kept or rejected: a rejection on an
        // inferred list is only as good as the assumption.
        judged.notes.extend(
            rules
                .inferred
                .iter()
                .map(|i| format!("{}: {i}", offer.backend)),
        );
        match fit(machine, &rules) {
            Fit::Runs(check_notes) => {
                judged.usable.push(offer.backend.clone());
                judged.notes.extend(
                    check_notes
                        .into_iter()
                        .map(|n| format!("{}: {n}", offer.backend)),
                );
            }
            Fit::CpuAlone(no_gpu) => {
                judged.rejected.push(Considered {
                    backend: offer.backend.clone(),
                    rejection: Some(no_gpu.clone()),
                });
                judged.last_resort.push((offer.backend.clone(), no_gpu));
            }
            Fit::Rejected(rejection) => judged.rejected.push(Considered {
                backend: offer.backend.clone(),
                rejection: Some(rejection),
            }),
        }
    }
    judged
        .usable
        .sort_by_key(|b| preference_key(classes, policy, b));
    judged.usable.dedup();
    judged
        .last_resort
        .sort_by_key(|(b, _)| last_resort_key(policy, b));
    judged.last_resort.dedup_by(|a, b| a.0 == b.0);
    judged.notes.dedup();
    judged
}

/// Every offered backend with its verdict: the chosen one first, then the usable ones in
/// preference order, then the rejected ones. The builds of last resort are usable, after the
/// others, only when one of them was chosen (`chose_last_resort`); else nothing runs on the CPU
/// alone that a better build does not, so they are rejected for what the machine lacks (`no
/// NVIDIA GPU on this machine`), in the order offered, as builds that cannot use a GPU here.
fn account(
    policy: &Policy,
    chosen: Option<&Backend>,
    chose_last_resort: bool,
    usable: &[Backend],
    last_resort: &[(Backend, Rejection)],
    rejected: Vec<Considered>,
) -> Vec<Considered> {
    let mut considered = Vec::new();
    if let Some(chosen) = chosen {
        considered.push(Considered {
            backend: chosen.clone(),
            rejection: None,
        });
    }
    for backend in usable.iter().filter(|b| Some(*b) != chosen) {
        let rejection = match (&policy.pinned, chosen) {
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
    let last_resort = if chose_last_resort { last_resort } else { &[] };
    for (backend, no_gpu) in last_resort.iter().filter(|(b, _)| Some(b) != chosen) {
        let rejection = match (&policy.pinned, chosen) {
            (Some(pinned), _) => Rejection::NotPinned {
                pinned: pinned.clone(),
            },
            (None, Some(by)) => Rejection::CpuLastResort {
                no_gpu: Box::new(no_gpu.clone()),
                by: by.clone(),
            },
            (None, None) => unreachable!("a build of last resort exists, so one was chosen"),
        };
        considered.push(Considered {
            backend: backend.clone(),
            rejection: Some(rejection),
        });
    }
    // A pinned backend the probes rejected is already listed, as chosen; builds of last resort
    // listed as usable are not listed again.
    considered.extend(rejected.into_iter().filter(|entry| {
        chosen != Some(&entry.backend) && !last_resort.iter().any(|(b, _)| *b == entry.backend)
    }));
    considered
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

/// Sort key among builds of last resort, smallest first: the site's preferences, then NVIDIA,
/// AMD, Intel (as between a machine's devices), then the newest. None uses a GPU here, so no
/// device class decides.
fn last_resort_key(
    policy: &Policy,
    backend: &Backend,
) -> (usize, BackendKind, std::cmp::Reverse<Backend>) {
    let site_rank = policy
        .prefer
        .iter()
        .position(|b| b == backend)
        .unwrap_or(policy.prefer.len());
    (
        site_rank,
        backend.kind(),
        std::cmp::Reverse(backend.clone()),
    )
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
    cpu_last_resort: bool,
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
            Some(other) if cpu_last_resort => {
                format!("{other} was chosen, to run on the CPU alone")
            }
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

#[cfg(test)]
mod tests {
    use super::*;

    const NO_GPU: &str = r#"{"platform":"linux-x86_64"}"#;
    const MI300X: &str = r#"{"platform":"linux-x86_64","amd":{"gpus":[{"name":"AMD Instinct MI300X","gfx":"gfx942"}]}}"#;

    /// The decision for torch `version` on the machine `json` among `offered`, each with a file
    /// for the machine's platform.
    fn decide_on(json: &str, policy: &Policy, version: &str, offered: &[&str]) -> Decision {
        let catalog = Catalog::embedded();
        let machine: Machine = serde_json::from_str(json).unwrap();
        let release = catalog
            .train_release("torch", &version.parse().unwrap())
            .release;
        let offers: Vec<Offer> = offered
            .iter()
            .map(|b| Offer {
                backend: b.parse().unwrap(),
                has_platform_file: true,
            })
            .collect();
        decide(catalog, &machine, policy, release, &offers)
    }

    fn lines(decision: &Decision) -> Vec<String> {
        decision
            .considered
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn a_cuda_build_above_the_driver_s_cuda_says_minor_version_compatibility_decided() {
        // RTX 5090 on driver 570 (CUDA 12.8, known by its driver alone): torch 2.8's cu129 runs
        // by minor-version compatibility, and the explanation names that rule.
        let driver_570 = r#"{"platform":"linux-x86_64","nvidia":{"driver_version":"570.86.10","gpus":[{"compute_capability":"12.0"}]}}"#;
        let decision = decide_on(
            driver_570,
            &Policy::default(),
            "2.8.0",
            &["cu126", "cu128", "cu129"],
        );
        assert_eq!(decision.chosen, Some("cu129".parse().unwrap()));
        let notes = decision.notes.join("\n");
        assert!(
            notes.contains("cu129: needs CUDA 12.9, above the CUDA 12.8 of driver 570.86.10")
                && notes.contains("minor-version compatibility, the rule that decided here")
                && notes.contains("from 525.60.13"),
            "{notes}"
        );
        // A driver whose own CUDA covers the build: no such note.
        let driver_575 = driver_570.replace("570.86.10", "575.57.08");
        let decision = decide_on(
            &driver_575,
            &Policy::default(),
            "2.8.0",
            &["cu126", "cu128", "cu129"],
        );
        assert_eq!(decision.chosen, Some("cu129".parse().unwrap()));
        assert!(
            !decision.notes.iter().any(|n| n.contains("minor-version")),
            "{:?}",
            decision.notes
        );
        // Reported by NVML: the same rule, in the machine's words.
        let reported = r#"{"platform":"linux-x86_64","nvidia":{"cuda_version":"12.8","gpus":[{"compute_capability":"9.0"}]}}"#;
        let decision = decide_on(reported, &Policy::default(), "2.8.0", &["cu128", "cu129"]);
        assert!(
            decision.notes.iter().any(|n| n.starts_with(
                "cu129: needs CUDA 12.9, above the CUDA 12.8 of the machine's driver"
            )),
            "{:?}",
            decision.notes
        );
    }

    #[test]
    fn only_gpu_builds_on_a_machine_without_a_gpu_keeps_one_as_a_cpu_build_of_last_resort() {
        let decision = decide_on(NO_GPU, &Policy::default(), "2.9.0", &["cu128", "cu130"]);
        assert_eq!(decision.chosen, Some("cu130".parse().unwrap()));
        assert_eq!(decision.cpu_last_resort, Some(Rejection::NoNvidiaGpu));
        assert_eq!(
            lines(&decision),
            [
                "cu130: chosen",
                "cu128: no NVIDIA GPU on this machine, so it would run on the CPU alone: a CPU build of last resort, ranked below cu130",
            ]
        );
        assert_eq!(decision.considered[1].verdict(), "usable");
        assert_eq!(
            decision.notes,
            [
                "cu130: kept as a CPU build of last resort: no NVIDIA GPU on this machine, so its CUDA code goes unused and it runs on the CPU (this version offers no CPU build for linux-x86_64)"
            ]
        );
    }

    #[test]
    fn a_cpu_build_ranks_above_every_build_of_last_resort() {
        let decision = decide_on(
            NO_GPU,
            &Policy::default(),
            "2.9.0",
            &["cu130", "rocm6.4", "xpu", "cpu"],
        );
        assert_eq!(decision.chosen, Some(Backend::Cpu));
        assert_eq!(decision.cpu_last_resort, None);
        // Rejected for what the machine lacks, as before issue 18: none is needed.
        assert_eq!(
            lines(&decision),
            [
                "cpu: chosen",
                "cu130: no NVIDIA GPU on this machine",
                "rocm6.4: no AMD GPU on this machine",
                "xpu: no Intel GPU on this machine",
            ]
        );
        assert!(
            decision.considered[1..]
                .iter()
                .all(|c| c.verdict() == "rejected")
        );
        assert!(decision.notes.is_empty(), "{:?}", decision.notes);
    }

    #[test]
    fn builds_of_last_resort_rank_nvidia_amd_intel_then_newest_unless_the_site_prefers() {
        let decision = decide_on(
            NO_GPU,
            &Policy::default(),
            "2.9.0",
            &["xpu", "rocm6.4", "cu126", "cu130"],
        );
        let order: Vec<String> = decision
            .considered
            .iter()
            .map(|c| c.backend.to_string())
            .collect();
        assert_eq!(order, ["cu130", "cu126", "rocm6.4", "xpu"]);
        let policy = Policy {
            pinned: None,
            prefer: vec!["cu126".parse().unwrap()],
        };
        let decision = decide_on(NO_GPU, &policy, "2.9.0", &["cu126", "cu130"]);
        assert_eq!(decision.chosen, Some("cu126".parse().unwrap()));
    }

    #[test]
    fn a_build_that_uses_the_machines_gpu_ranks_above_a_build_of_last_resort() {
        let decision = decide_on(MI300X, &Policy::default(), "2.9.0", &["cu130", "rocm6.4"]);
        assert_eq!(decision.chosen, Some("rocm6.4".parse().unwrap()));
        assert_eq!(decision.cpu_last_resort, None);
        assert_eq!(lines(&decision)[1], "cu130: no NVIDIA GPU on this machine");
        // A CUDA-only version on the same machine: the CUDA build, on the CPU, and the AMD GPU
        // left without a build is said.
        let decision = decide_on(MI300X, &Policy::default(), "2.9.0", &["cu130"]);
        assert_eq!(decision.chosen, Some("cu130".parse().unwrap()));
        assert_eq!(
            decision.notes,
            [
                "cu130: kept as a CPU build of last resort: no NVIDIA GPU on this machine, so its CUDA code goes unused and it runs on the CPU (this version offers no CPU build for linux-x86_64, nor a build that uses this machine's GPUs)",
                "this machine's AMD GPU has no ROCm build of this version (torch 2.9 line) to run; cu130 was chosen, to run on the CPU alone",
            ]
        );
    }

    #[test]
    fn a_gpu_the_build_cannot_use_is_no_last_resort() {
        let v100 = r#"{"platform":"linux-x86_64","nvidia":{"driver_version":"580.65.06","gpus":[{"name":"Tesla V100-SXM2-32GB","compute_capability":"7.0"}]}}"#;
        let decision = decide_on(v100, &Policy::default(), "2.11.0", &["cu128"]);
        assert_eq!(decision.chosen, None);
        assert_eq!(decision.cpu_last_resort, None);
        assert_eq!(decision.considered[0].verdict(), "rejected");
        assert!(
            decision.notes.iter().all(|n| !n.contains("last resort")),
            "{:?}",
            decision.notes
        );
    }

    #[test]
    fn a_pinned_gpu_build_on_a_machine_without_its_gpu_says_it_runs_on_the_cpu() {
        let policy = Policy {
            pinned: Some("cu128".parse().unwrap()),
            prefer: Vec::new(),
        };
        let decision = decide_on(NO_GPU, &policy, "2.9.0", &["cpu", "cu128", "cu130"]);
        assert_eq!(decision.chosen, Some("cu128".parse().unwrap()));
        assert_eq!(decision.cpu_last_resort, Some(Rejection::NoNvidiaGpu));
        assert_eq!(
            lines(&decision),
            [
                "cu128: chosen",
                "cpu: the backend is pinned to cu128",
                "cu130: the backend is pinned to cu128",
            ]
        );
        assert_eq!(
            decision.notes,
            [
                "cu128 is pinned although the probes say it cannot use a GPU here: no NVIDIA GPU on this machine, so it will run on the CPU alone"
            ]
        );
    }
}
