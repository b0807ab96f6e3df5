//! One accelerator build across a PyTorch release train, whichever way each project is
//! published. torch, torchvision and torchaudio of one release must agree on the build (a
//! `cu130` torchvision needs a `cu130` torch), yet a proxy may see torch as wheel variants
//! (`torch-2.9.0-...-cuda13.0.whl`) and torchaudio as local-labelled wheels
//! (`torchaudio-2.9.0+cu130-...whl`) on different pages, each selected on its own request.
//!
//! Local-labelled pages are kept consistent by construction: every project of a release is
//! decided by the same catalog rules ([`crate::select::decide`] with the train's release) over
//! the same builds. Variant pages take part in that by making the same decision over their
//! labels read as builds (`cuda13.0` is `cu130`, `null` is `cpu`) and serving its label first.
//! Strict PEP 825 ordering can differ from it, because the reference providers describe a
//! machine less precisely than the catalog: several NVIDIA GPUs of different architectures
//! leave no `sm_arch` every GPU shares, and a site's preference (`prefer = ["cu128"]`) has no
//! place in a variants file. Every such departure is stated in the version's notes.

use std::collections::BTreeMap;

use pep440_rs::Version;

use crate::backend::{Backend, BackendKind};
use crate::catalog::Catalog;
use crate::machine::Machine;
use crate::select::{Offer, Policy, decide};

/// The label the release train's catalog decision serves for one version, and why it departs
/// from PEP 825's best when it does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct TrainChoice {
    /// The label of the build the catalog chooses.
    pub label: String,
    /// A note for the explanation when `label` is not PEP 825's best.
    pub note: Option<String>,
}

/// The catalog's choice among `wheels` (each a label and whether the wheel's platform tags run
/// on the machine) for `version` of the release-train `project`; `None` when the project is not
/// part of a release train, or the catalog chooses no build that has a label here (then PEP 825
/// order stands). `pep_825_best` is the label strict ordering (with this crate's judgements)
/// puts first.
pub(super) fn train_choice<'a>(
    catalog: &Catalog,
    machine: &Machine,
    policy: &Policy,
    project: &str,
    version: &Version,
    wheels: impl IntoIterator<Item = (&'a str, bool)>,
    pep_825_best: Option<&str>,
) -> Option<TrainChoice> {
    if !catalog.is_release_train_project(project) {
        return None;
    }
    let mut offered: BTreeMap<Backend, bool> = BTreeMap::new();
    let mut labels: BTreeMap<Backend, &str> = BTreeMap::new();
    for (label, runs_here) in wheels {
        let Some(backend) = Backend::from_variant_label(label) else {
            continue;
        };
        *offered.entry(backend.clone()).or_default() |= runs_here;
        labels.entry(backend).or_insert(label);
    }
    let offers: Vec<Offer> = offered
        .into_iter()
        .map(|(backend, has_platform_file)| Offer {
            backend,
            has_platform_file,
        })
        .collect();
    let train = catalog.train_release(project, version);
    let decision = decide(catalog, machine, policy, train.release, &offers);
    let chosen = decision.chosen?;
    let label = (*labels.get(&chosen)?).to_string();
    let note = (pep_825_best != Some(label.as_str())).then(|| {
        let why = pep_825_best
            .and_then(Backend::from_variant_label)
            .and_then(|best| {
                decision
                    .considered
                    .iter()
                    .find(|c| c.backend == best)
                    .and_then(|c| c.rejection.as_ref())
                    .map(|rejection| format!(" (by the catalog, {best}: {rejection})"))
            })
            .unwrap_or_default();
        let last_resort = decision
            .cpu_last_resort
            .as_ref()
            .map(|no_gpu| format!("; {chosen} is kept as a CPU build of last resort: {no_gpu}, so it runs on the CPU alone"))
            .unwrap_or_default();
        format!(
            "one build across torch {}: `{label}` is served, the {chosen} build the catalog's rules choose for this release, as for its local-labelled torch, torchvision and torchaudio wheels; PEP 825 alone would choose `{}`{why}{last_resort}",
            train.release.torch,
            pep_825_best.unwrap_or("nothing"),
        )
    });
    Some(TrainChoice { label, note })
}

/// Why the train's label is served though the variants file calls it incompatible here
/// (`why`, the file's reason): one build serves the release train, and PyTorch's CUDA and ROCm
/// wheels bundle their runtime, so the machine's own CUDA or ROCm version is not what limits
/// them. `minor_version` is the catalog's minor-version-compatibility rule for a CUDA build,
/// when that rule decided ([`crate::select::minor_version_compatibility`]).
pub(super) fn override_note(
    label: &str,
    why: &str,
    machine: &Machine,
    minor_version: Option<&str>,
) -> String {
    let rule = match Backend::from_variant_label(label).map(|b| b.kind()) {
        Some(BackendKind::Cuda) => match minor_version {
            Some(rule) => format!("it {rule}"),
            None => "PyTorch's CUDA wheels bundle their CUDA runtime".to_string(),
        },
        Some(BackendKind::Rocm) => {
            let installed = machine
                .amd
                .as_ref()
                .and_then(|amd| amd.rocm_version.as_ref())
                .map_or_else(
                    || "no ROCm is installed".to_string(),
                    |rocm| format!("the ROCm {rocm} installed here is not what it runs on"),
                );
            format!(
                "PyTorch's ROCm wheels bundle their ROCm runtime, so {installed}: the GPU's gfx target decides"
            )
        }
        _ => "the catalog's rules choose it for the release train".to_string(),
    };
    format!(
        "`{label}` is served although the variants file calls it incompatible here ({why}): one build serves the whole release train, and {rule}"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn machine(json: &str) -> Machine {
        serde_json::from_str(json).unwrap()
    }

    const LABELS: [&str; 7] = [
        "cuda12.6", "cuda12.8", "cuda13.0", "rocm6.3", "rocm6.4", "xpu", "null",
    ];
    const A100_T4: &str = r#"{"platform":"linux-x86_64","nvidia":{"driver_version":"580.65.06","gpus":[{"compute_capability":"8.0"},{"compute_capability":"7.5"}]}}"#;

    fn choice(
        machine_json: &str,
        policy: &Policy,
        project: &str,
        best: &str,
    ) -> Option<TrainChoice> {
        train_choice(
            Catalog::embedded(),
            &machine(machine_json),
            policy,
            project,
            &"2.9.0".parse().unwrap(),
            LABELS.iter().map(|label| (*label, true)),
            Some(best),
        )
    }

    #[test]
    fn the_catalog_decides_for_a_release_train_and_says_where_pep_825_differs() {
        let agreed = choice(A100_T4, &Policy::default(), "torch", "cuda13.0").unwrap();
        assert_eq!(agreed.label, "cuda13.0");
        assert_eq!(agreed.note, None);

        let differs = choice(A100_T4, &Policy::default(), "torch", "null").unwrap();
        assert_eq!(differs.label, "cuda13.0");
        let note = differs.note.unwrap();
        assert!(note.contains("PEP 825 alone would choose `null`"), "{note}");
        assert!(note.contains("cu130 build"), "{note}");

        let prefer = Policy {
            prefer: vec!["cu128".parse().unwrap()],
            ..Policy::default()
        };
        let preferred = choice(A100_T4, &prefer, "torch", "cuda13.0").unwrap();
        assert_eq!(preferred.label, "cuda12.8");
        let note = preferred.note.unwrap();
        assert!(note.contains("cu130: usable"), "{note}");
    }

    #[test]
    fn projects_outside_a_release_train_keep_pep_825_order() {
        assert_eq!(choice(A100_T4, &Policy::default(), "numpy", "null"), None);
    }

    #[test]
    fn a_choice_without_a_label_here_leaves_pep_825_order() {
        // Only labels no build is read from: nothing to decide over.
        let none = train_choice(
            Catalog::embedded(),
            &machine(A100_T4),
            &Policy::default(),
            "torch",
            &"2.9.0".parse().unwrap(),
            [("x86_64_v3", true)],
            Some("x86_64_v3"),
        );
        assert_eq!(none, None);
    }
}
