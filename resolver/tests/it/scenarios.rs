//! Every scenario of `tests/data/scenarios.toml`: a machine and the backend each torch version
//! must resolve to from the catalog alone, or from a page offering the scenario's builds.

use std::collections::BTreeMap;

use serde::Deserialize;
use wheelgate_resolver::select::{Decision, FileRef, select_page, select_release};
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
    /// The builds an index page offers for every version of `expect`, instead of the catalog's
    /// list: backends (`cu130`) or `plain` (unlabelled wheels, as on PyPI: the release's default
    /// build per platform), each with wheels for Linux x86_64 and aarch64 and Windows x86_64.
    #[serde(default)]
    offered: Option<Vec<String>>,
}

/// A torch page with `offered`'s wheels for `version`: download.pytorch.org's links for a
/// backend, PyPI's file host for `plain`.
fn page(version: &str, offered: &[String]) -> Vec<(String, String)> {
    let mut files = Vec::new();
    for build in offered {
        for tag in [
            "manylinux_2_28_x86_64",
            "manylinux_2_28_aarch64",
            "win_amd64",
        ] {
            files.push(if build == "plain" {
                let name = format!("torch-{version}-cp312-cp312-{tag}.whl");
                let url = format!("https://files.pythonhosted.org/packages/8f/02/{name}");
                (name, url)
            } else {
                let name = format!("torch-{version}+{build}-cp312-cp312-{tag}.whl");
                let url = format!(
                    "https://download.pytorch.org/whl/{build}/{}",
                    name.replace('+', "%2B")
                );
                (name, url)
            });
        }
    }
    files
}

fn decision(catalog: &Catalog, scenario: &Scenario, version: &str) -> Decision {
    let Some(offered) = &scenario.offered else {
        let version: pep440_rs::Version = version.parse().expect("scenario versions are valid");
        return select_release(
            catalog,
            &scenario.machine,
            &scenario.policy,
            "torch",
            Some(&version),
        )
        .decision;
    };
    let files = page(version, offered);
    let refs: Vec<FileRef<'_>> = files
        .iter()
        .map(|(filename, url)| FileRef { filename, url })
        .collect();
    let selection = select_page(catalog, &scenario.machine, &scenario.policy, "torch", &refs);
    let [only] = <[_; 1]>::try_from(selection.versions).expect("one version on the page");
    only.decision.expect("torch wheels have a backend")
}

fn explanation(catalog: &Catalog, scenario: &Scenario, version: &str) -> (String, String) {
    let decision = decision(catalog, scenario, version);
    let chosen = decision
        .chosen
        .as_ref()
        .map_or_else(|| "none".to_string(), ToString::to_string);
    let mut lines: Vec<String> = decision
        .considered
        .iter()
        .map(ToString::to_string)
        .collect();
    lines.extend(decision.notes.iter().cloned());
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

/// A decision says whether it rests on an assumption: a release the catalog lacks or marks
/// inferred (2.15, 2.16), or a build whose rules were inferred (2.11's cu129); a confirmed one
/// (2.9 on an H100) does not.
#[test]
fn decisions_say_when_they_rest_on_inference() {
    let catalog = Catalog::embedded();
    let h100: wheelgate_resolver::Machine = serde_json::from_str(
        r#"{"platform":"linux-x86_64","nvidia":{"driver_version":"580.65.06","gpus":[{"compute_capability":"9.0"}]}}"#,
    )
    .unwrap();
    let rests = |version: &str| {
        let version: pep440_rs::Version = version.parse().unwrap();
        select_release(catalog, &h100, &Policy::default(), "torch", Some(&version))
            .decision
            .rests_on_inference
    };
    assert!(!rests("2.9.0"));
    assert!(!rests("2.14.0"));
    assert!(rests("2.15.0"));
    assert!(rests("2.16.0"));
}
