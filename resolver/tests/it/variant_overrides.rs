//! Where the variant index serves a label its variants file calls incompatible (issue 44 item
//! 3), and what it says: the release train's one build (the catalog's decision, as on the
//! local-labelled pages) wins over the file, and `/explain/`'s notes name the rule that
//! decided: CUDA minor-version compatibility for a CUDA build above the driver's own CUDA
//! version, the bundled ROCm runtime for a ROCm build above the installed ROCm. And a machine
//! known by its driver alone is never served `null` where its driver's CUDA fits (item 1).

use std::collections::BTreeMap;

use wheelgate_resolver::select::FileRef;
use wheelgate_resolver::variants::{VersionVariants, choose_variants, parse_variants_json};
use wheelgate_resolver::{Catalog, Machine, Policy};

const TAGS: &str = "cp312-cp312-manylinux_2_28_x86_64";

fn fixture(name: &str) -> Option<String> {
    let path = format!(
        "{}/../../shared/fixtures/variants-json/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).ok();
    if text.is_none() {
        println!("fixture {path} is absent: this test was not run");
    }
    text
}

/// torch `version` as PyTorch published it as variants (one Linux wheel per label of its
/// variants file), chosen for `machine`: the label served and the version's choice.
fn choose(version: &str, machine: &str) -> Option<(String, VersionVariants)> {
    let text = fixture(&format!("torch-{version}-variants.json"))?;
    let file = parse_variants_json(&text).unwrap();
    let mut names: Vec<String> = file
        .labels()
        .map(|label| format!("torch-{version}-{TAGS}-{label}.whl"))
        .collect();
    names.push(format!("torch-{version}-variants.json"));
    let refs: Vec<FileRef<'_>> = names
        .iter()
        .map(|name| FileRef {
            filename: name,
            url: name,
        })
        .collect();
    let parsed = BTreeMap::from([(refs.len() - 1, Ok(file))]);
    let machine: Machine = serde_json::from_str(machine).unwrap();
    let choice = choose_variants(
        Catalog::embedded(),
        &machine,
        &Policy::default(),
        "torch",
        &refs,
        &parsed,
    );
    let served = choice
        .pick_for(&format!("torch-{version}-{TAGS}.whl"))
        .map(|pick| pick.label.clone())?;
    Some((served, choice.versions.into_iter().next().unwrap()))
}

#[test]
fn a_cuda_build_above_the_driver_s_cuda_says_minor_version_compatibility_decided() {
    // H100 whose CUDA is exactly 12.8: torch 2.8's file says `cu129` needs 12.9. The catalog
    // serves cu129 for the train (minor-version compatibility); the note says the file calls
    // it incompatible, and which rule decided.
    let h100 = r#"{"platform":"linux-x86_64","nvidia":{"driver_version":"570.86.10","cuda_version":"12.8","gpus":[{"compute_capability":"9.0"}]}}"#;
    let Some((served, version)) = choose("2.8.0", h100) else {
        return;
    };
    assert_eq!(served, "cu129");
    let notes = version.notes.join("\n");
    assert!(
        notes.contains("`cu129` is served although the variants file calls it incompatible here")
            && notes.contains("cuda_version_lower_bound")
            && notes.contains("minor-version compatibility, the rule that decided here")
            && notes.contains("bundle their CUDA runtime"),
        "{notes}"
    );
}

#[test]
fn a_rocm_build_above_the_installed_rocm_says_the_runtime_is_bundled() {
    for (machine, installed) in [
        (
            r#"{"platform":"linux-x86_64","amd":{"rocm_version":"6.4.1","gpus":[{"name":"AMD Instinct MI300X","gfx":"gfx942"}]}}"#,
            "6.4.1",
        ),
        (
            r#"{"platform":"linux-x86_64","amd":{"rocm_version":"7.0.2","gpus":[{"name":"AMD Radeon 8060S","gfx":"gfx1151","integrated":true}]}}"#,
            "7.0.2",
        ),
    ] {
        let Some((served, version)) = choose("2.10.0", machine) else {
            return;
        };
        assert_eq!(served, "rocm7.1", "{machine}");
        let notes = version.notes.join("\n");
        assert!(
            notes.contains(
                "`rocm7.1` is served although the variants file calls it incompatible here"
            ) && notes.contains(&format!(
                "the ROCm {installed} installed here is not what it runs on"
            )) && notes.contains("bundle their ROCm runtime"),
            "{notes}"
        );
    }
}

#[test]
fn a_machine_known_by_its_driver_alone_gets_a_cuda_variant_not_null() {
    // RTX 5090 on driver 570 (CUDA 12.8, its branch's), known by its driver alone: a CUDA
    // variant of every version, never the CPU build. Before, the driver was taken to support
    // CUDA 12.0 only: torch 2.8 got `00000000` from PEP 825.
    let rtx_5090 = r#"{"platform":"linux-x86_64","nvidia":{"driver_version":"570.86.10","gpus":[{"name":"NVIDIA GeForce RTX 5090","compute_capability":"12.0"}]}}"#;
    for (version, expected) in [("2.9.0", "cuda12.8"), ("2.10.0", "cuda12.8")] {
        let Some((served, version_choice)) = choose(version, rtx_5090) else {
            return;
        };
        assert_eq!(served, expected, "torch {version}");
        // The file and the catalog agree here: no override note.
        assert!(
            !version_choice
                .notes
                .iter()
                .any(|note| note.contains("calls it incompatible")),
            "{:?}",
            version_choice.notes
        );
    }
    let Some((served, version)) = choose("2.8.0", rtx_5090) else {
        return;
    };
    // torch 2.8: PEP 825 alone gives `cu128`; the train's build is cu129 by minor-version
    // compatibility, and the notes say so.
    assert_eq!(served, "cu129");
    let notes = version.notes.join("\n");
    assert!(
        notes.contains("PEP 825 alone would choose `cu128`")
            && notes.contains("above the CUDA 12.8 of driver 570.86.10"),
        "{notes}"
    );
}
