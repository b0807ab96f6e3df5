//! One accelerator build across a release train when its projects are published two ways: torch
//! (and torchvision) as wheel variants (PEP 825) and torchaudio as local-labelled wheels, as a
//! proxy sees them when one index has variants and another `+cu130` wheels. For every machine
//! and site policy of `tests/data/scenarios.toml`, the variant chosen by
//! `variants::choose_variants` must be the build `select_page` keeps for the local-labelled
//! companion of the same release (the label `cuda13.0` and the backend `cu130` are one build).

use std::collections::BTreeMap;

use serde::Deserialize;
use wheelgate_resolver::select::{FileRef, select_page};
use wheelgate_resolver::variants::{choose_variants, parse_variants_json};
use wheelgate_resolver::{Backend, Catalog, Machine, Platform, Policy};

#[derive(Deserialize)]
struct File {
    scenario: Vec<Scenario>,
}

#[derive(Deserialize)]
struct Scenario {
    name: String,
    machine: Machine,
    #[serde(default)]
    policy: Policy,
}

/// The releases with a variants file in the shared fixtures: (variant project, its version,
/// its variants file, the local-labelled companion and its version).
const TRAINS: [(&str, &str, &str, &str, &str); 4] = [
    (
        "torch",
        "2.9.0",
        "torch-2.9.0-variants.json",
        "torchaudio",
        "2.9.0",
    ),
    (
        "torchvision",
        "0.24.0",
        "torchvision-0.24.0-variants.json",
        "torchaudio",
        "2.9.0",
    ),
    (
        "torch",
        "2.10.0",
        "torch-2.10.0-variants.json",
        "torchaudio",
        "2.10.0",
    ),
    (
        "torchvision",
        "0.25.0",
        "torchvision-0.25.0-variants.json",
        "torch",
        "2.10.0",
    ),
];

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

/// The wheel platform tag PyTorch publishes for `platform`.
fn platform_tag(platform: Platform) -> &'static str {
    match platform.to_string().as_str() {
        "linux-aarch64" => "manylinux_2_28_aarch64",
        "windows-x86_64" => "win_amd64",
        "macos-arm64" => "macosx_11_0_arm64",
        "linux-s390x" => "manylinux_2_28_s390x",
        _ => "manylinux_2_28_x86_64",
    }
}

/// The build the variant page serves for `machine` (as a backend), and the notes.
fn variant_build(
    scenario: &Scenario,
    project: &str,
    version: &str,
    variants_json: &str,
) -> (Option<Backend>, Vec<String>) {
    let file = parse_variants_json(variants_json).expect("the fixture parses");
    let tag = platform_tag(scenario.machine.platform);
    let mut names: Vec<String> = file
        .labels()
        .map(|label| format!("{project}-{version}-cp312-cp312-{tag}-{label}.whl"))
        .collect();
    names.push(format!("{project}-{version}-variants.json"));
    let refs: Vec<FileRef<'_>> = names
        .iter()
        .map(|name| FileRef {
            filename: name,
            url: name,
        })
        .collect();
    let parsed = BTreeMap::from([(refs.len() - 1, Ok(file))]);
    let choice = choose_variants(
        Catalog::embedded(),
        &scenario.machine,
        &scenario.policy,
        project,
        &refs,
        &parsed,
    );
    let version = &choice.versions[0];
    let backend = version
        .picks
        .first()
        .and_then(|pick| Backend::from_variant_label(&pick.label));
    (backend, version.notes.clone())
}

/// The build a local-labelled page of `project` offering `backends` keeps for `machine`.
fn local_build(
    scenario: &Scenario,
    project: &str,
    version: &str,
    backends: &[Backend],
) -> Option<Backend> {
    let tag = platform_tag(scenario.machine.platform);
    let files: Vec<(String, String)> = backends
        .iter()
        .map(|backend| {
            let name = format!("{project}-{version}+{backend}-cp312-cp312-{tag}.whl");
            let url = format!("/whl/{backend}/{}", name.replace('+', "%2B"));
            (name, url)
        })
        .collect();
    let refs: Vec<FileRef<'_>> = files
        .iter()
        .map(|(filename, url)| FileRef { filename, url })
        .collect();
    let selection = select_page(
        Catalog::embedded(),
        &scenario.machine,
        &scenario.policy,
        project,
        &refs,
    );
    selection.versions[0].decision.as_ref()?.chosen.clone()
}

#[test]
fn variant_and_local_labelled_projects_of_one_release_get_one_build() {
    let file: File =
        toml::from_str(include_str!("../data/scenarios.toml")).expect("scenarios.toml parses");
    let mut failures = Vec::new();
    let mut compared = 0;
    for (project, version, fixture_name, companion, companion_version) in TRAINS {
        let Some(text) = fixture(fixture_name) else {
            return;
        };
        let backends: Vec<Backend> = parse_variants_json(&text)
            .expect("the fixture parses")
            .labels()
            .filter_map(Backend::from_variant_label)
            .collect();
        for scenario in &file.scenario {
            let (variant, notes) = variant_build(scenario, project, version, &text);
            let local = local_build(scenario, companion, companion_version, &backends);
            compared += 1;
            if variant != local {
                failures.push(format!(
                    "{} ({:?}): {project} {version} as variants gets {}, {companion} {companion_version} as local labels gets {}\n  notes: {notes:?}",
                    scenario.name,
                    scenario.policy,
                    variant.map_or_else(|| "nothing".to_string(), |b| b.to_string()),
                    local.map_or_else(|| "nothing".to_string(), |b| b.to_string()),
                ));
            }
        }
    }
    assert!(compared >= 80, "only {compared} comparisons");
    assert!(
        failures.is_empty(),
        "{} inconsistent builds:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}
