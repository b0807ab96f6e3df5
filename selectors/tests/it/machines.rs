//! Every fixture machine under `tests/machines/<name>/`: a `root/` tree of files in the formats
//! real machines write, and `expect.toml` with the expected description, the sources of some
//! facts, and the expected backend per torch release (`[choice]`).

use std::collections::BTreeMap;
use std::fs;
use std::path::PathBuf;

use serde::Deserialize;
use wheelgate_resolver::{Backend, Catalog, Machine, Policy, select_release};
use wheelgate_selectors::{Env, detect};

use crate::support::{context, machines_dir};

/// One fixture's `expect.toml`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expectation {
    /// What machine this is, for people.
    pub summary: String,
    /// Torch release line (`2.9`) → the backend selection must choose on this machine.
    pub choice: BTreeMap<String, Backend>,
    /// The expected description.
    pub machine: Machine,
    /// Fact name → the expected source, as displayed (`/sys/module/nvidia/version`).
    #[serde(default)]
    pub sources: BTreeMap<String, String>,
    /// Environment variables (overrides) the probes run with.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
}

/// A fixture machine: its name, root tree and expectations.
pub struct Fixture {
    pub name: String,
    pub root: PathBuf,
    pub expect: Expectation,
}

/// Every fixture, sorted by name.
pub fn fixtures() -> Vec<Fixture> {
    let mut names: Vec<String> = fs::read_dir(machines_dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    names
        .into_iter()
        .map(|name| {
            let dir = machines_dir().join(&name);
            let text = fs::read_to_string(dir.join("expect.toml")).unwrap();
            let expect: Expectation = toml::from_str(&text)
                .unwrap_or_else(|e| panic!("{name}/expect.toml does not parse: {e}"));
            Fixture {
                name,
                root: dir.join("root"),
                expect,
            }
        })
        .collect()
}

#[test]
fn every_fixture_machine_is_described_as_expected() {
    let fixtures = fixtures();
    assert!(
        fixtures.len() >= 20,
        "only {} fixture machines",
        fixtures.len()
    );
    let mut failures = Vec::new();
    for fixture in &fixtures {
        let ctx = context(&fixture.root, Env::from_pairs(fixture.expect.env.clone()));
        let detection = match detect(&ctx) {
            Ok(detection) => detection,
            Err(error) => {
                failures.push(format!("{}: {error}", fixture.name));
                continue;
            }
        };
        if detection.machine != fixture.expect.machine {
            failures.push(format!(
                "{}: described as\n  {}\nexpected\n  {}",
                fixture.name,
                serde_json::to_string(&detection.machine).unwrap(),
                serde_json::to_string(&fixture.expect.machine).unwrap(),
            ));
        }
        for (fact, expected) in &fixture.expect.sources {
            let found = detection
                .facts
                .get(fact)
                .and_then(|f| f.source.as_ref())
                .map(ToString::to_string);
            if found.as_deref() != Some(expected.as_str()) {
                failures.push(format!(
                    "{}: source of `{fact}` is {found:?}, expected `{expected}`",
                    fixture.name
                ));
            }
        }
        assert!(
            !fixture.expect.choice.is_empty(),
            "{}: no [choice]",
            fixture.name
        );
        // The probed machine, through wheelgate-resolver's selection, gives the expected backend.
        for (release, expected) in &fixture.expect.choice {
            let version: pep440_rs::Version = format!("{release}.0").parse().unwrap();
            let selection = select_release(
                Catalog::embedded(),
                &detection.machine,
                &Policy::default(),
                "torch",
                Some(&version),
            );
            if selection.decision.chosen.as_ref() != Some(expected) {
                let reasons: Vec<String> = selection
                    .decision
                    .rejections()
                    .map(|(backend, why)| format!("{backend}: {why}"))
                    .collect();
                failures.push(format!(
                    "{}: torch {release} chose {:?}, expected {expected}\n  {}",
                    fixture.name,
                    selection.decision.chosen.map(|b| b.to_string()),
                    reasons.join("\n  ")
                ));
            }
        }
        assert!(!fixture.expect.summary.is_empty());
    }
    assert!(failures.is_empty(), "\n{}", failures.join("\n\n"));
}

#[test]
fn the_token_of_every_fixture_machine_round_trips() {
    for fixture in fixtures() {
        let machine = &fixture.expect.machine;
        let token = wheelgate_resolver::token::encode(machine);
        let back = wheelgate_resolver::token::decode(&token)
            .unwrap_or_else(|e| panic!("{}: `{token}` does not decode: {e}", fixture.name));
        assert_eq!(&back, machine, "{}: `{token}`", fixture.name);
    }
}
