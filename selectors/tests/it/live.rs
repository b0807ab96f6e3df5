//! Fixtures captured on real hardware (`scripts/capture-machine`) carry `live.json`: what
//! `wheelgate detect --json --sources` reported on that machine, its GPU libraries (NVML,
//! libcuda) and CPUID included. Kernel files are the first source of every fact, so the
//! captured files alone must describe the same machine; a library may only add what no file
//! holds (the CUDA version the driver supports), and that must not change any answer.

use std::fs;

use serde::Deserialize;
use wheelgate_resolver::{Catalog, Machine, Policy, select_release};
use wheelgate_selectors::{Env, detect};

use crate::machines::fixtures;
use crate::support::{context, machines_dir};

/// `wheelgate detect --json --sources` as printed.
#[derive(Debug, Deserialize)]
struct Live {
    machine: Machine,
    facts: Vec<LiveFact>,
}

#[derive(Debug, Deserialize)]
struct LiveFact {
    name: String,
    value: Option<String>,
    source: Option<String>,
}

/// The facts only a library can give.
const LIBRARY_ONLY: &[&str] = &["nvidia.cuda_version"];

#[test]
fn captured_trees_describe_what_the_live_probes_found() {
    let mut checked = Vec::new();
    for fixture in fixtures() {
        let path = machines_dir().join(&fixture.name).join("live.json");
        let Ok(text) = fs::read_to_string(&path) else {
            continue;
        };
        let live: Live = serde_json::from_str(&text)
            .unwrap_or_else(|err| panic!("{}: live.json: {err}", fixture.name));
        let detection = detect(&context(&fixture.root, Env::default())).unwrap();

        let mut expected = live.machine.clone();
        if let Some(nvidia) = &mut expected.nvidia {
            nvidia.cuda_version = None;
        }
        assert_eq!(
            detection.machine, expected,
            "{}: the captured files describe another machine than the live probes",
            fixture.name
        );
        for fact in &live.facts {
            let (Some(value), false) = (&fact.value, LIBRARY_ONLY.contains(&fact.name.as_str()))
            else {
                continue;
            };
            let found = detection
                .facts
                .get(&fact.name)
                .and_then(|f| f.value.clone());
            assert_eq!(
                found.as_ref(),
                Some(value),
                "{}: `{}` was `{value}` from {:?} live, {found:?} from the files",
                fixture.name,
                fact.name,
                fact.source
            );
        }
        // What the libraries added does not change a single answer.
        for release in fixture.expect.choice.keys() {
            let version: pep440_rs::Version = format!("{release}.0").parse().unwrap();
            let choose = |machine: &Machine| {
                select_release(
                    Catalog::embedded(),
                    machine,
                    &Policy::default(),
                    "torch",
                    Some(&version),
                )
                .decision
                .chosen
            };
            assert_eq!(
                choose(&live.machine),
                choose(&detection.machine),
                "{}: torch {release}",
                fixture.name
            );
        }
        checked.push(fixture.name);
    }
    // The H200 captured on 2026-11-26 met NVML for real: its GPU facts came from the library.
    assert!(
        checked.contains(&"h200-container-580".to_string()),
        "{checked:?}"
    );
    let text = fs::read_to_string(machines_dir().join("h200-container-580/live.json")).unwrap();
    let live: Live = serde_json::from_str(&text).unwrap();
    let source = |name: &str| {
        live.facts
            .iter()
            .find(|f| f.name == name)
            .and_then(|f| f.source.clone())
    };
    assert_eq!(source("nvidia.gpu0").as_deref(), Some("NVML (library)"));
    assert_eq!(
        source("nvidia.cuda_version").as_deref(),
        Some("NVML (library)")
    );
    assert_eq!(
        source("nvidia.driver_version").as_deref(),
        Some("/sys/module/nvidia/version")
    );
}
