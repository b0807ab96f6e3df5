//! A selection from files grouped ahead (`FileGroups`, `select_grouped`) chooses exactly what
//! `select_page` chooses: for a page grouped piece by piece, as the proxy groups a page while it
//! arrives, and for pages grouped one by one and merged, as the proxy serves a project that
//! several sources list; and without the reasons for dropped files, the same but for them.

use proptest::prelude::*;
use wheelgate_resolver::select::{
    FileGroups, FileRef, PageSelection, name_hash, select_grouped, select_grouped_kept, select_page,
};
use wheelgate_resolver::{Catalog, Machine, Policy};

const MACHINES: &[&str] = &[
    r#"{"platform":"linux-x86_64","glibc":"2.36","nvidia":{"driver_version":"580.65.06","gpus":[{"compute_capability":"9.0"}]}}"#,
    r#"{"platform":"linux-x86_64","nvidia":{"driver_version":"470.256.02","gpus":[{"name":"Tesla T4","compute_capability":"7.5"}]}}"#,
    r#"{"platform":"linux-aarch64","nvidia":{"driver_version":"580.65.06","gpus":[{"compute_capability":"9.0"}]}}"#,
    r#"{"platform":"linux-x86_64","glibc":"2.36"}"#,
    r#"{"platform":"macos-arm64"}"#,
];

/// Files of every kind a grouping treats apart: labelled wheels under their own and another
/// backend's directory, unlabelled wheels (PyPI's torch), a version written two ways, sdists of
/// old formats, variant files, names that do not parse, labels shaped like a backend that name
/// none, and a local label that is not plain.
const FILES: &[(&str, &str)] = &[
    (
        "torch-2.9.0+cu130-cp312-cp312-manylinux_2_28_x86_64.whl",
        "/whl/cu130/torch-2.9.0%2Bcu130-cp312-cp312-manylinux_2_28_x86_64.whl",
    ),
    (
        "torch-2.9.0+cu128-cp312-cp312-manylinux_2_28_x86_64.whl",
        "/whl/cu128/torch-2.9.0%2Bcu128-cp312-cp312-manylinux_2_28_x86_64.whl",
    ),
    (
        "torch-2.9.0+cu126-cp312-cp312-manylinux_2_28_x86_64.whl",
        "/whl/cu130/torch-2.9.0%2Bcu126-cp312-cp312-manylinux_2_28_x86_64.whl",
    ),
    (
        "torch-2.9.0+cpu-cp312-cp312-manylinux_2_28_aarch64.whl",
        "/whl/cpu/torch-2.9.0%2Bcpu-cp312-cp312-manylinux_2_28_aarch64.whl",
    ),
    (
        "torch-2.9.0-cp312-none-macosx_11_0_arm64.whl",
        "/whl/cpu/torch-2.9.0-cp312-none-macosx_11_0_arm64.whl",
    ),
    (
        "torch-2.9.0-cp312-cp312-manylinux_2_28_x86_64.whl",
        "https://files.example/ab/cd/torch-2.9.0-cp312-cp312-manylinux_2_28_x86_64.whl",
    ),
    (
        "torch-2.9.0-cp312-cp312-manylinux_2_28_aarch64.whl",
        "https://files.example/ef/01/torch-2.9.0-cp312-cp312-manylinux_2_28_aarch64.whl",
    ),
    (
        "torch-2.9.0-cp312-cp312-win_amd64.whl",
        "https://files.example/23/45/torch-2.9.0-cp312-cp312-win_amd64.whl",
    ),
    (
        "torch-2.9-cp311-cp311-manylinux_2_28_x86_64.whl",
        "https://files.example/67/89/torch-2.9-cp311-cp311-manylinux_2_28_x86_64.whl",
    ),
    (
        "torch-2.8.0+rocm6.4-cp312-cp312-manylinux_2_28_x86_64.whl",
        "/whl/rocm6.4/torch-2.8.0%2Brocm6.4-cp312-cp312-manylinux_2_28_x86_64.whl",
    ),
    (
        "torch-2.8.0+cu128-cp312-cp312-manylinux_2_28_x86_64.whl",
        "/whl/cu128/torch-2.8.0%2Bcu128-cp312-cp312-manylinux_2_28_x86_64.whl",
    ),
    (
        "torch-2.8.0+xpu-cp312-cp312-win_amd64.whl",
        "/whl/xpu/torch-2.8.0%2Bxpu-cp312-cp312-win_amd64.whl",
    ),
    (
        "torch-2.8.0-cp312-cp312-manylinux_2_28_x86_64.whl",
        "https://files.example/aa/bb/torch-2.8.0-cp312-cp312-manylinux_2_28_x86_64.whl",
    ),
    (
        "torch-2.8.0.tar.gz",
        "https://files.example/cc/dd/torch-2.8.0.tar.gz",
    ),
    (
        "torch-2.7.0.zip",
        "https://files.example/cc/ee/torch-2.7.0.zip",
    ),
    (
        "torch-2.7.0+cu12.8-cp312-cp312-manylinux_2_28_x86_64.whl",
        "/whl/cu128/torch-2.7.0%2Bcu12.8-cp312-cp312-manylinux_2_28_x86_64.whl",
    ),
    (
        "torch-2.7.0+git1234-cp312-cp312-manylinux_2_28_x86_64.whl",
        "/whl/nightly/torch-2.7.0%2Bgit1234-cp312-cp312-manylinux_2_28_x86_64.whl",
    ),
    (
        "torch-2.7.0+cu126-cp312-cp312-manylinux_2_28_x86_64.whl",
        "/whl/cu126/torch-2.7.0%2Bcu126-cp312-cp312-manylinux_2_28_x86_64.whl",
    ),
    (
        "torch-2.9.0-cp312-cp312-manylinux_2_28_x86_64-cu130.whl",
        "/whl/variant/torch-2.9.0-cp312-cp312-manylinux_2_28_x86_64-cu130.whl",
    ),
    (
        "torch-2.9.0-variants.json",
        "/whl/variant/torch-2.9.0-variants.json",
    ),
    (
        "torch-not.a.version-cp312-cp312-manylinux_2_28_x86_64.whl",
        "/whl/cu130/torch-not.a.version-cp312-cp312-manylinux_2_28_x86_64.whl",
    ),
    ("torch-2.9.0-cp312.whl", "/whl/cu130/torch-2.9.0-cp312.whl"),
    ("readme.txt", "/whl/readme.txt"),
];

fn machine(json: &str) -> Machine {
    serde_json::from_str(json).unwrap()
}

fn refs(files: &[(&'static str, &'static str)]) -> Vec<FileRef<'static>> {
    files
        .iter()
        .map(|&(filename, url)| FileRef { filename, url })
        .collect()
}

/// A selection as text: `PageSelection` is compared whole, decisions and reasons included.
fn shown(selection: &PageSelection) -> String {
    format!("{selection:?}")
}

fn assert_same_choices(files: &[FileRef<'_>], groups: &FileGroups) {
    if groups.len() == files.len() {
        assert_eq!(
            groups.lists_variants(),
            wheelgate_resolver::variants::lists_variants(files),
            "whether the files list a variant file"
        );
        // What a merge of pages tells the files' names apart by.
        let hashes: Vec<u64> = files.iter().map(|file| name_hash(file.filename)).collect();
        assert_eq!(groups.name_hashes(), Some(&hashes[..]), "the names' hashes");
    }
    for json in MACHINES {
        let machine = machine(json);
        let whole = select_page(
            Catalog::embedded(),
            &machine,
            &Policy::default(),
            "torch",
            files,
        );
        let grouped = select_grouped(
            Catalog::embedded(),
            &machine,
            &Policy::default(),
            "torch",
            files,
            groups,
        );
        assert_eq!(shown(&grouped), shown(&whole), "on {json}");
        // Without the reasons: the same but for them.
        let kept = select_grouped_kept(
            Catalog::embedded(),
            &machine,
            &Policy::default(),
            "torch",
            files,
            groups,
        );
        assert!(kept.dropped.is_empty(), "no reasons on {json}");
        let without_reasons = PageSelection {
            dropped: Vec::new(),
            ..whole
        };
        assert_eq!(
            shown(&kept),
            shown(&without_reasons),
            "kept only, on {json}"
        );
    }
}

#[test]
fn the_real_page_grouped_in_pieces_selects_as_it_grouped_whole() {
    let page =
        wheelgate_resolver::index::parse_project_html(&wheelgate_testdata::torch_page_html())
            .unwrap();
    let files: Vec<FileRef<'_>> = page.files.iter().map(FileRef::from).collect();
    for piece in [1, 7, 500, files.len()] {
        let mut groups = FileGroups::default();
        for chunk in files.chunks(piece) {
            groups.add(chunk);
        }
        assert_eq!(groups.len(), files.len());
        assert_same_choices(&files, &groups);
    }
}

#[test]
fn groups_of_other_files_are_not_read_out_of_bounds() {
    let files = refs(FILES);
    let mut groups = FileGroups::default();
    groups.add(&files[..3]);
    assert_same_choices(&files, &groups);
}

/// Two pages as the proxy merges them: every file of the first, then each file of the second
/// whose name the first did not list; each page grouped alone, the groupings merged.
fn merged_selects_as_the_merged_page(
    first: &[(&'static str, &'static str)],
    second: &[(&'static str, &'static str)],
    piece: usize,
) {
    let (first, second) = (refs(first), refs(second));
    let mut seen = std::collections::HashSet::new();
    let mut merged = Vec::new();
    let mut places = [Vec::new(), Vec::new()];
    for (part, files) in [&first, &second].into_iter().enumerate() {
        for file in files {
            if seen.insert(file.filename) {
                places[part].push(Some(merged.len()));
                merged.push(*file);
            } else {
                places[part].push(None);
            }
        }
    }
    let grouped = |files: &[FileRef<'_>]| {
        let mut groups = FileGroups::default();
        for chunk in files.chunks(piece.max(1)) {
            groups.add(chunk);
        }
        groups
    };
    let (first_groups, second_groups) = (grouped(&first), grouped(&second));
    let groups = FileGroups::merged([
        (&first_groups, &places[0][..]),
        (&second_groups, &places[1][..]),
    ]);
    assert_eq!(groups.len(), merged.len());
    assert_same_choices(&merged, &groups);
}

#[test]
fn a_pytorch_page_and_a_pypi_page_merged_select_as_one_page() {
    let pytorch: Vec<_> = FILES
        .iter()
        .copied()
        .filter(|(_, url)| url.starts_with("/whl/"))
        .collect();
    let pypi: Vec<_> = FILES
        .iter()
        .copied()
        .filter(|(_, url)| !url.starts_with("/whl/"))
        .chain([FILES[0], FILES[4]])
        .collect();
    merged_selects_as_the_merged_page(&pytorch, &pypi, 3);
    merged_selects_as_the_merged_page(&pypi, &pytorch, 1);
}

/// `files` grouped in two parts, the second on its own and appended to the first.
fn appended_selects_as_grouped_whole(files: &[FileRef<'_>], split: usize) {
    let split = split.min(files.len());
    let mut head = FileGroups::default();
    head.add(&files[..split]);
    let mut tail = FileGroups::default();
    tail.add(&files[split..]);
    head.append(tail);
    assert_eq!(head.len(), files.len());
    assert_same_choices(files, &head);
    // Grouping goes on after an append as after an add.
    let mut more = head.clone();
    more.add(files);
    let twice: Vec<FileRef<'_>> = files.iter().chain(files).copied().collect();
    assert_same_choices(&twice, &more);
}

#[test]
fn the_real_page_grouped_in_two_halves_selects_as_it_grouped_whole() {
    let page =
        wheelgate_resolver::index::parse_project_html(&wheelgate_testdata::torch_page_html())
            .unwrap();
    let files: Vec<FileRef<'_>> = page.files.iter().map(FileRef::from).collect();
    for split in [0, 1, files.len() / 2, files.len()] {
        appended_selects_as_grouped_whole(&files, split);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn any_page_grouped_in_two_parts_selects_as_grouped_whole(
        picks in prop::collection::vec(0..FILES.len(), 0..40),
        split in 0usize..40,
    ) {
        let files: Vec<FileRef<'static>> = picks.iter().map(|&i| refs(&[FILES[i]])[0]).collect();
        appended_selects_as_grouped_whole(&files, split);
    }

    #[test]
    fn any_two_pages_merged_select_as_one_page(
        first in prop::collection::vec(0..FILES.len(), 0..30),
        second in prop::collection::vec(0..FILES.len(), 0..30),
        piece in 1usize..8,
    ) {
        let pick = |at: &Vec<usize>| at.iter().map(|&i| FILES[i]).collect::<Vec<_>>();
        merged_selects_as_the_merged_page(&pick(&first), &pick(&second), piece);
    }
}
