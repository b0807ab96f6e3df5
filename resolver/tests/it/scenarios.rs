//! Every scenario of `tests/data/scenarios.toml`: a machine and the backend each torch version
//! must resolve to from the catalog alone.

use std::collections::BTreeMap;

use serde::Deserialize;
use wheelgate_resolver::select::select_release;
use wheelgate_resolver::{Catalog, Machine, Policy};

#[derive(Deserialize)]
struct File {
    scenario: Vec<Scenario>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Scenario {
    name: String,
    machine: Machine,
    #[serde(default)]
    policy: Policy,
    expect: BTreeMap<String, String>,
    #[serde(default)]
    reasons: Vec<String>,
    /// "version: text" that must not appear in the explanation.
    #[serde(default)]
    absent: Vec<String>,
}

fn explanation(catalog: &Catalog, scenario: &Scenario, version: &str) -> (String, String) {
    let version: pep440_rs::Version = version.parse().expect("scenario versions are valid");
    let selection = select_release(
        catalog,
        &scenario.machine,
        &scenario.policy,
        "torch",
        Some(&version),
    );
    let chosen = selection
        .decision
        .chosen
        .as_ref()
        .map_or_else(|| "none".to_string(), ToString::to_string);
    let mut lines: Vec<String> = selection
        .decision
        .considered
        .iter()
        .map(ToString::to_string)
        .collect();
    lines.extend(selection.decision.notes.iter().cloned());
    (chosen, lines.join("\n"))
}

#[test]
fn every_scenario_resolves_as_expected() {
    let file: File =
        toml::from_str(include_str!("../data/scenarios.toml")).expect("scenarios.toml parses");
    let catalog = Catalog::embedded();
    let mut failures = Vec::new();
    for scenario in &file.scenario {
        for (version, expected) in &scenario.expect {
            let (chosen, text) = explanation(catalog, scenario, version);
            if &chosen != expected {
                failures.push(format!(
                    "{} / torch {version}: expected {expected}, got {chosen}\n{text}",
                    scenario.name
                ));
            }
        }
        for (wanted, must_appear) in scenario
            .reasons
            .iter()
            .map(|r| (r, true))
            .chain(scenario.absent.iter().map(|r| (r, false)))
        {
            let (version, needle) = wanted
                .split_once(": ")
                .expect("reasons are `version: text`");
            let (_, text) = explanation(catalog, scenario, version);
            if text.contains(needle) != must_appear {
                let verb = if must_appear { "lacks" } else { "has" };
                failures.push(format!(
                    "{} / torch {version}: explanation {verb} `{needle}`:\n{text}",
                    scenario.name
                ));
            }
        }
    }
    assert!(
        file.scenario.len() >= 20,
        "the scenario table shrank to {}",
        file.scenario.len()
    );
    assert!(
        failures.is_empty(),
        "{} scenario failures:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}
