//! Named bad inputs of a wheel-variant index (issue 11), through `choose_variants` as the proxy
//! runs it on torch 2.9.0 for an H100 on driver 580: a variants file that lists labels no
//! wheel has, variants whose properties contradict each other, a label defined twice, a label
//! outside the grammar inside the file. Each is skipped with a reason (never a panic), and the
//! version's other variants are chosen as usual. (Wheels whose label the file does not list,
//! labels outside the grammar in filenames, unknown schemas and namespaces: the unit tests of
//! `variants::choose`.)

use std::collections::BTreeMap;

use wheelgate_resolver::select::FileRef;
use wheelgate_resolver::variants::{VariantChoice, choose_variants, parse_variants_json};
use wheelgate_resolver::{Catalog, Machine, Policy};

const TAGS: &str = "cp312-cp312-manylinux_2_28_x86_64";
const H100: &str = r#"{"platform":"linux-x86_64","nvidia":{"driver_version":"580.65.06","gpus":[{"compute_capability":"9.0"}]}}"#;
const CPU: &str = r#"{"platform":"linux-x86_64"}"#;
const V100: &str = r#"{"platform":"linux-x86_64","nvidia":{"driver_version":"580.65.06","gpus":[{"compute_capability":"7.0"}]}}"#;

/// A variants file with these `variants` entries (JSON text).
fn variants_json(entries: &str) -> String {
    format!(
        r#"{{"$schema": "https://variants-schema.wheelnext.dev/v0.0.3.json",
            "default-priorities": {{"namespace": ["nvidia"]}},
            "variants": {{{entries}}}}}"#
    )
}

const CUDA_13: &str =
    r#""cuda13.0": {"nvidia": {"cuda_version_lower_bound": ["13.0"], "sm_arch": ["90_real"]}}"#;
const CUDA_12_8: &str = r#""cuda12.8": {"nvidia": {"cuda_version_lower_bound": ["12.0"], "sm_arch": ["70_real", "90_real"]}}"#;

/// torch 2.9.0 with one wheel per label and the variants file `json`, chosen for `machine`.
fn choose(machine: &str, labels: &[&str], json: &str) -> (VariantChoice, Vec<String>) {
    let mut names: Vec<String> = labels
        .iter()
        .map(|label| format!("torch-2.9.0-{TAGS}-{label}.whl"))
        .collect();
    names.push("torch-2.9.0-variants.json".to_string());
    let refs: Vec<FileRef<'_>> = names
        .iter()
        .map(|name| FileRef {
            filename: name,
            url: name,
        })
        .collect();
    let parsed = BTreeMap::from([(
        refs.len() - 1,
        parse_variants_json(json).map_err(|e| e.to_string()),
    )]);
    let machine: Machine = serde_json::from_str(machine).unwrap();
    let choice = choose_variants(
        Catalog::embedded(),
        &machine,
        &Policy::default(),
        "torch",
        &refs,
        &parsed,
    );
    (choice, names)
}

fn served(choice: &VariantChoice) -> Option<&str> {
    choice
        .pick_for(&format!("torch-2.9.0-{TAGS}.whl"))
        .map(|pick| pick.label.as_str())
}

fn skipped_reason<'a>(choice: &'a VariantChoice, names: &[String], label: &str) -> &'a str {
    let index = names
        .iter()
        .position(|n| n.ends_with(&format!("-{label}.whl")))
        .unwrap();
    choice
        .skipped
        .iter()
        .find(|(i, _)| *i == index)
        .map_or("", |(_, why)| why.as_str())
}

#[test]
fn labels_listed_without_a_wheel_leave_the_best_wheel_there_is() {
    let json = variants_json(&format!(r#"{CUDA_13}, {CUDA_12_8}, "null": {{}}"#));
    let (choice, _) = choose(H100, &["cuda12.8", "null"], &json);
    assert_eq!(served(&choice), Some("cuda12.8"));
    assert_eq!(choice.picks().count(), 1);
}

#[test]
fn a_variant_whose_properties_contradict_is_skipped_and_the_rest_chosen() {
    let broken = r#""cuda13.0": {"nvidia": {"cuda_version_lower_bound": ["13.0"], "cuda_version_upper_bound": ["12.0"], "sm_arch": ["90_real"]}}"#;
    let json = variants_json(&format!(r#"{broken}, {CUDA_12_8}, "null": {{}}"#));
    let (choice, names) = choose(H100, &["cuda13.0", "cuda12.8", "null"], &json);
    // The catalog would choose cu130 for this machine: the broken variant is out of reach of
    // both PEP 825 and the release train's decision.
    assert_eq!(served(&choice), Some("cuda12.8"));
    let why = skipped_reason(&choice, &names, "cuda13.0");
    assert!(why.contains("contradict each other"), "{why}");
    assert!(
        why.contains("`13.0` or newer and older than `12.0`"),
        "{why}"
    );
    let rejected = &choice.versions[0].rejected;
    assert!(
        rejected
            .iter()
            .any(|(label, why)| label == "cuda13.0" && why.contains("contradict")),
        "{rejected:?}"
    );
}

#[test]
fn a_null_with_properties_is_skipped_so_a_machine_none_fits_gets_nothing_and_why() {
    let json = variants_json(&format!(
        r#"{CUDA_13}, "null": {{"nvidia": {{"sm_arch": ["90_real"]}}}}"#
    ));
    // A V100 (7.0): an NVIDIA GPU that CUDA 13 builds have no code for, so the CUDA build is
    // not even a CPU build of last resort here.
    let (choice, names) = choose(V100, &["cuda13.0", "null"], &json);
    assert_eq!(served(&choice), None);
    let why = skipped_reason(&choice, &names, "null");
    assert!(why.contains("`null` is reserved"), "{why}");
    let why = skipped_reason(&choice, &names, "cuda13.0");
    assert!(why.contains("no variant of"), "{why}");
}

#[test]
fn a_null_with_properties_is_skipped_so_a_machine_without_a_gpu_gets_the_cuda_build_of_last_resort()
{
    let json = variants_json(&format!(
        r#"{CUDA_13}, "null": {{"nvidia": {{"sm_arch": ["90_real"]}}}}"#
    ));
    let (choice, names) = choose(CPU, &["cuda13.0", "null"], &json);
    // The release train's catalog decision (issue 18): with no CPU build left, the CUDA build
    // runs on the CPU alone, as its local-labelled torchvision and torchaudio would.
    assert_eq!(served(&choice), Some("cuda13.0"));
    let why = skipped_reason(&choice, &names, "null");
    assert!(why.contains("`null` is reserved"), "{why}");
    let notes = choice.versions[0].notes.join("\n");
    assert!(
        notes.contains(
            "cu130 is kept as a CPU build of last resort: no NVIDIA GPU on this machine, so it runs on the CPU alone"
        ),
        "{notes}"
    );
}

#[test]
fn a_file_that_defines_a_label_twice_or_breaks_the_grammar_falls_back_to_labels() {
    for (entries, named) in [
        (
            format!(r#"{CUDA_13}, {CUDA_12_8}, {CUDA_13}, "null": {{}}"#),
            "twice",
        ),
        (
            format!(r#"{CUDA_13}, "CUDA12.8": {{}}, "null": {{}}"#),
            "`CUDA12.8` is not a valid variant label",
        ),
    ] {
        let (choice, _) = choose(
            H100,
            &["cuda13.0", "cuda12.8", "null"],
            &variants_json(&entries),
        );
        // Read by its labels instead, as the catalog's builds: cu130 for this machine.
        assert_eq!(served(&choice), Some("cuda13.0"), "{entries}");
        let note = &choice.versions[0].notes[0];
        assert!(note.contains("could not be read"), "{note}");
        assert!(note.contains(named), "{note}");
    }
}
