//! Named bad inputs (issue 8): pages whose signals disagree about a file's backend, labels shaped
//! like a backend that name none, and machines with impossible facts. Each gets a clear message
//! naming the problem and never a panic.

use wheelgate_resolver::select::{Dropped, FileRef, PageSelection, select_page};
use wheelgate_resolver::{Catalog, Machine, Policy, token};

const A10_DRIVER_570: &str = r#"{"platform":"linux-x86_64","nvidia":{"driver_version":"570.86.10","gpus":[{"name":"NVIDIA A10","compute_capability":"8.6"}]}}"#;
const H100_DRIVER_580: &str = r#"{"platform":"linux-x86_64","nvidia":{"driver_version":"580.65.06","gpus":[{"name":"NVIDIA H100","compute_capability":"9.0"}]}}"#;

/// torch 2.9.0 wheels for Linux x86_64: each (label, directory) pair one file.
fn page(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(label, directory)| {
            let name = format!("torch-2.9.0+{label}-cp312-cp312-manylinux_2_28_x86_64.whl");
            let url = format!("/whl/{directory}/{}", name.replace('+', "%2B"));
            (name, url)
        })
        .collect()
}

fn select(machine: &str, files: &[(String, String)]) -> PageSelection {
    let machine: Machine = serde_json::from_str(machine).unwrap();
    let refs: Vec<FileRef<'_>> = files
        .iter()
        .map(|(filename, url)| FileRef { filename, url })
        .collect();
    select_page(
        Catalog::embedded(),
        &machine,
        &Policy::default(),
        "torch",
        &refs,
    )
}

fn chosen_and_notes(selection: &PageSelection) -> (String, String) {
    let decision = selection.versions[0].decision.as_ref().unwrap();
    let chosen = decision.chosen.as_ref().map(ToString::to_string);
    (chosen.unwrap_or_default(), decision.notes.join("\n"))
}

#[test]
fn a_label_and_directory_that_disagree_are_judged_by_the_stricter_reading() {
    // `+cu128` wheels in the cu130 directory: nothing says which is right.
    let files = page(&[("cpu", "cpu"), ("cu126", "cu126"), ("cu128", "cu130")]);
    // The A10's driver 570 runs cu128 but not cu130: the disagreeing file is dropped.
    let selection = select(A10_DRIVER_570, &files);
    let (chosen, notes) = chosen_and_notes(&selection);
    assert_eq!(chosen, "cu126", "{notes}");
    assert!(
        notes.contains("cu128: 1 file labelled cu128 sit in the cu130 directory; the signals disagree, so they are judged by the stricter reading"),
        "{notes}"
    );
    assert!(
        notes.contains("dropped, as cu130: driver 570.86.10 is below 580"),
        "{notes}"
    );
    let (index, reason) = &selection.dropped.iter().find(|(i, _)| *i == 2).unwrap();
    assert_eq!(*index, 2);
    assert!(matches!(reason, Dropped::SignalsDisagree(_)));
    assert!(
        reason
            .to_string()
            .contains("labelled cu128 but in the cu130 directory"),
        "{reason}"
    );
    // An H100 with driver 580 runs both readings: the file is kept and chosen.
    let selection = select(H100_DRIVER_580, &files);
    let (chosen, notes) = chosen_and_notes(&selection);
    assert_eq!(chosen, "cu128", "{notes}");
    assert!(notes.contains("both run here, so they are kept"), "{notes}");
    assert!(selection.keeps(2));
}

#[test]
fn labels_shaped_like_a_backend_that_name_none_are_dropped_with_their_name() {
    let files = page(&[
        ("cu126", "cu126"),
        ("cu", "cu"),
        ("rocm", "rocm"),
        ("xpu2", "xpu2"),
        ("cu12.8", "cu128"),
        ("cpu.cxx11.abi", "cpu-cxx11-abi"),
    ]);
    let selection = select(H100_DRIVER_580, &files);
    let (chosen, _) = chosen_and_notes(&selection);
    assert_eq!(chosen, "cu126");
    for (index, label) in [
        (1, "cu"),
        (2, "rocm"),
        (3, "xpu2"),
        (4, "cu12.8"),
        (5, "cpu.cxx11.abi"),
    ] {
        let (_, reason) = selection.dropped.iter().find(|(i, _)| *i == index).unwrap();
        assert!(matches!(reason, Dropped::UnknownBackend(_)), "{reason:?}");
        let text = reason.to_string();
        assert!(
            text.contains(&format!("`{label}` is not a backend name")),
            "{text}"
        );
        assert!(!selection.keeps(index));
    }
}

#[test]
fn machines_with_impossible_facts_are_refused_with_the_value_named() {
    for (json, value) in [
        (
            r#"{"platform":"linux-x86_64","nvidia":{"driver_version":"580.65.06","gpus":[{"compute_capability":"99.9"}]}}"#,
            "`99.9` is not a valid compute capability",
        ),
        (
            r#"{"platform":"linux-x86_64","nvidia":{"driver_version":"abc","gpus":[]}}"#,
            "`abc` is not a valid version",
        ),
        (
            r#"{"platform":"linux-x86_64","amd":{"gpus":[{"gfx":"gfx"}]}}"#,
            "`gfx` is not an AMD gfx target",
        ),
        (r#"{"platform":"beos-x86"}"#, "`beos-x86` is not a platform"),
    ] {
        let error = serde_json::from_str::<Machine>(json)
            .unwrap_err()
            .to_string();
        assert!(error.contains(value), "{error}");
    }
    for (text, value) in [
        ("1-lx-n580.65.06-s99.9", "s99.9"),
        ("1-lx-nabc", "nabc"),
        ("1-lx-n580-c0.0", "c0.0"),
    ] {
        let error = token::decode(text).unwrap_err().to_string();
        assert!(error.contains(value), "{text}: {error}");
    }
}
