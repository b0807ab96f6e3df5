//! wheelgate's variants-file validation and PEP 825 ordering against variantlib 0.2.2, the
//! reference implementation, differentially: the same files and the same supported properties
//! given to both, every answer compared. variantlib runs in the venv `scripts/variantlib-setup`
//! creates (`target/variantlib`, or `WHEELGATE_VARIANTLIB_VENV`), through
//! `tests/variantlib/driver.py`; wheelgate is `parse_variants_json` and `order_variants`.
//!
//! The cases:
//!
//! - PyTorch's five published files (`../shared/fixtures/variants-json/`) for twelve machines,
//!   three ways: as published to both (variantlib refuses them all: a documented departure),
//!   as published to wheelgate and converted to variantlib's `v0.2.0` schema for variantlib,
//!   and converted to both (the orders must agree). Three machines are known to wheelgate by
//!   their driver version alone, while variantlib is given what NVIDIA's provider reports on
//!   them (the driver branch's CUDA version, as `nvidia-smi` shows it);
//! - 48 generated files from a seeded generator stressing the ordering: namespace, feature and
//!   value priorities, static namespaces, a null variant or none, features and namespaces the
//!   machine does not report, values it does not support, and identical variants told apart
//!   only by their labels;
//! - hand-written files on the edges of validation.
//!
//! Every case must agree exactly unless it is listed in [`KNOWN`], where the difference must
//! be exactly the one recorded: a difference that changes or goes away fails the test, so the
//! table in docs/src/variants.md ("Against the reference implementation") stays true. Whatever
//! is recorded, a machine variantlib serves a GPU variant is never served `null` (nor nothing)
//! by wheelgate.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{Map, Value, json};
use wheelgate_resolver::Machine;
use wheelgate_resolver::variants::{SupportedProperties, order_variants, parse_variants_json};

/// Environment variable naming the venv with variantlib (default: `<workspace>/target/variantlib`).
const VENV_ENV: &str = "WHEELGATE_VARIANTLIB_VENV";

/// How many files the generator makes.
const GENERATED: u64 = 48;

/// The known differences: a case name (or a prefix of names, ending in `*`) and how the two
/// answers differ there. Each is in the table of docs/src/variants.md with its reason.
const KNOWN: &[(&str, Difference)] = &[
    // variantlib 0.2.2 knows only its own v0.2.0 schema and refuses every key of the drafts
    // PyTorch published with (`enable-if`, `plugin-use`, `install-time`,
    // `default-priorities.property`, a top-level `static-properties`).
    ("published/*", Difference::VariantlibRefuses),
    // A label defined twice: Python's JSON reader keeps the last; PEP 825 forbids it.
    ("validation/duplicate-label", Difference::WheelgateRefuses),
    // An empty value list: variantlib takes it (and ignores the feature); PEP 825 forbids it.
    ("validation/empty-value-list", Difference::WheelgateRefuses),
    // No `variants` at all: variantlib takes it (nothing to order); wheelgate falls back to
    // the labels, as for any unreadable file.
    ("validation/no-variants", Difference::WheelgateRefuses),
    // A variant without properties under another label than `null`: torch 2.8's `00000000`.
    (
        "validation/zero-properties-not-null",
        Difference::VariantlibRefuses,
    ),
    // A `null` label with properties: variantlib refuses the file; wheelgate reads it and its
    // chooser skips that one variant as a contradiction (`variants/contradictions.rs`).
    (
        "validation/null-with-properties",
        Difference::VariantlibRefuses,
    ),
    // A `$schema` naming a format neither knows: variantlib reads it as its own; PEP 825 says
    // variant wheels of an unknown format version MUST be taken as unsupported.
    ("validation/unknown-schema", Difference::WheelgateRefuses),
];

/// How the answers differ in a known case.
#[derive(Debug, Clone, Copy)]
enum Difference {
    /// variantlib refuses the file, wheelgate orders it: in every case the pattern names.
    VariantlibRefuses,
    /// wheelgate refuses the file, variantlib orders it: in every case the pattern names.
    WheelgateRefuses,
}

impl Difference {
    /// Whether the answers are this difference.
    fn check(self, ours: &Answer, theirs: &Answer) -> bool {
        matches!(
            (self, ours, theirs),
            (
                Difference::VariantlibRefuses,
                Answer::Ordered(_),
                Answer::Refused(_)
            ) | (
                Difference::WheelgateRefuses,
                Answer::Refused(_),
                Answer::Ordered(_)
            )
        )
    }
}

/// One file and one machine, as each tool is given them.
#[derive(Debug, Clone)]
struct Case {
    name: String,
    /// The file wheelgate reads.
    wheelgate_file: String,
    /// The file variantlib reads.
    variantlib_file: String,
    /// The machine's properties: namespace, feature, values most preferred first.
    supported: Vec<(String, String, Vec<String>)>,
    /// The properties variantlib is given where its providers would see the machine otherwise
    /// than wheelgate does (a machine wheelgate knows by its driver version alone).
    provider_supported: Option<Vec<(String, String, Vec<String>)>>,
    /// The file's `default-priorities.feature` and `.property`, given to variantlib as its
    /// configuration (0.2.2's files carry neither).
    feature_priorities: Value,
    property_priorities: Value,
    /// Labels renamed by a conversion (torch 2.8's `00000000` → `null`), applied to wheelgate's
    /// answer before comparing.
    renamed: BTreeMap<String, String>,
}

/// What one tool made of a case.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Answer {
    Refused(String),
    Ordered(Vec<String>),
}

impl Answer {
    /// The same verdict: both refused (each in its own words), or the same order.
    fn agrees(&self, other: &Answer) -> bool {
        match (self, other) {
            (Answer::Refused(_), Answer::Refused(_)) => true,
            (Answer::Ordered(a), Answer::Ordered(b)) => a == b,
            _ => false,
        }
    }
}

#[test]
fn variants_agree_with_variantlib() {
    let python = variantlib_python();
    let mut cases = published_cases();
    let published = cases.len();
    cases.extend(generated_cases());
    let generated = cases.len() - published;
    cases.extend(validation_cases());

    let theirs = run_variantlib(&python, &cases);
    let mut agreed = 0;
    let mut known = 0;
    let mut failures = Vec::new();
    let mut rich = 0;
    let mut seen_known = vec![false; KNOWN.len()];
    for (case, theirs) in cases.iter().zip(theirs) {
        let ours = wheelgate(case);
        if let Answer::Ordered(order) = &ours
            && case.name.starts_with("generated/")
            && order.len() >= 3
        {
            rich += 1;
        }
        if let Some(why) = gpu_variant_served_null(case, &ours, &theirs) {
            failures.push(why);
        }
        let expected = KNOWN
            .iter()
            .enumerate()
            .find(|(_, (pattern, _))| matches_name(pattern, &case.name));
        match expected {
            None if ours.agrees(&theirs) => agreed += 1,
            None => failures.push(format!(
                "{}: variantlib {theirs:?}, wheelgate {ours:?}\n  file (wheelgate): {}\n  supported: {:?}",
                case.name, case.wheelgate_file, case.supported
            )),
            Some((index, (pattern, difference))) => {
                if difference.check(&ours, &theirs) {
                    seen_known[index] = true;
                    known += 1;
                } else {
                    failures.push(format!(
                        "{}: the known difference `{pattern}` ({difference:?}) changed: now variantlib {theirs:?}, wheelgate {ours:?}; update KNOWN and the table in docs/src/variants.md",
                        case.name
                    ));
                }
            }
        }
    }
    for ((pattern, difference), seen) in KNOWN.iter().zip(seen_known) {
        if !seen {
            failures.push(format!(
                "the known difference `{pattern}` ({difference:?}) no longer happens: update KNOWN and the table in docs/src/variants.md"
            ));
        }
    }
    println!(
        "variantlib 0.2.2 against wheelgate: {} cases ({published} on PyTorch's files, {generated} generated, {} on validation): {agreed} agree, {known} differ as recorded; {rich} generated orders of 3 or more",
        cases.len(),
        cases.len() - published - generated
    );
    assert!(
        failures.is_empty(),
        "{} of {} cases differ from variantlib beyond the recorded differences:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
    // The generator must keep making files worth ordering, not one compatible variant each.
    assert!(
        rich * 2 >= usize::try_from(GENERATED).unwrap(),
        "only {rich} of {GENERATED} generated files order three variants or more"
    );
    assert!(
        agreed >= cases.len() / 2,
        "only {agreed} of {} cases agree",
        cases.len()
    );
}

/// On PyTorch's files, a machine variantlib serves a GPU variant (its best is not `null`) must
/// not get `null`, nothing, or a refusal from wheelgate, whatever difference is recorded.
fn gpu_variant_served_null(case: &Case, ours: &Answer, theirs: &Answer) -> Option<String> {
    let published = ["published/", "converted/", "converted-both/"]
        .iter()
        .any(|kind| case.name.starts_with(kind));
    let Answer::Ordered(theirs) = theirs else {
        return None;
    };
    let their_best = theirs.first().filter(|label| *label != "null")?;
    let our_best = match ours {
        Answer::Ordered(order) => order.first().map(String::as_str),
        Answer::Refused(_) => None,
    };
    (published && our_best.is_none_or(|label| label == "null")).then(|| {
        format!(
            "{}: variantlib serves the GPU variant `{their_best}`, wheelgate {}",
            case.name,
            our_best.map_or("nothing".to_string(), |label| format!("`{label}`"))
        )
    })
}

fn matches_name(pattern: &str, name: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) => name.starts_with(prefix),
        None => name == pattern,
    }
}

/// The venv's Python, or a panic that says how to install it: this test never passes silently
/// without variantlib.
fn variantlib_python() -> PathBuf {
    let venv = std::env::var_os(VENV_ENV)
        .filter(|v| !v.is_empty())
        .map_or_else(
            || Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/variantlib"),
            PathBuf::from,
        );
    let python = if cfg!(windows) {
        venv.join("Scripts/python.exe")
    } else {
        venv.join("bin/python")
    };
    let ready = python.is_file()
        && Command::new(&python)
            .args(["-c", "import variantlib.api"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
    assert!(
        ready,
        "the differential variant test needs variantlib in a venv, and `{}` cannot import it: run `scripts/variantlib-setup` (or set {VENV_ENV} to a venv that has variantlib 0.2.2)",
        python.display()
    );
    python
}

/// Runs the driver once over every case.
fn run_variantlib(python: &Path, cases: &[Case]) -> Vec<Answer> {
    let driver = Path::new(env!("CARGO_MANIFEST_DIR")).join("variantlib/driver.py");
    let input: Vec<Value> = cases
        .iter()
        .map(|case| {
            json!({
                "name": case.name,
                "file": case.variantlib_file,
                "supported": case.provider_supported.as_ref().unwrap_or(&case.supported),
                "feature_priorities": case.feature_priorities,
                "property_priorities": case.property_priorities,
            })
        })
        .collect();
    let mut child = Command::new(python)
        .arg(&driver)
        .env_remove("PYTHONPATH")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start variantlib's driver");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(Value::Array(input).to_string().as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "{} failed:\n{}",
        driver.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    let answers: Vec<Value> = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(answers.len(), cases.len());
    answers
        .into_iter()
        .zip(cases)
        .map(|(answer, case)| {
            assert_eq!(answer["name"], case.name.as_str());
            match &answer["order"] {
                Value::Array(labels) => Answer::Ordered(
                    labels
                        .iter()
                        .map(|l| l.as_str().unwrap().to_string())
                        .collect(),
                ),
                _ => Answer::Refused(answer["error"].as_str().unwrap_or_default().to_string()),
            }
        })
        .collect()
}

/// wheelgate's answer: the file parsed, the variants ordered for the given properties.
fn wheelgate(case: &Case) -> Answer {
    let file = match parse_variants_json(&case.wheelgate_file) {
        Ok(file) => file,
        Err(error) => return Answer::Refused(error.to_string()),
    };
    let mut supported = SupportedProperties::new();
    for (namespace, feature, values) in &case.supported {
        supported.push(namespace, feature, values.clone(), "given");
    }
    let order = order_variants(&file, &supported);
    Answer::Ordered(
        order
            .labels()
            .into_iter()
            .map(|label| {
                case.renamed
                    .get(label)
                    .map_or(label, String::as_str)
                    .to_string()
            })
            .collect(),
    )
}

// --- PyTorch's published files -------------------------------------------------------------

/// The machines PyTorch's files are ordered for, as `Machine` JSON; their properties come from
/// wheelgate's providers ([`SupportedProperties::from_machine`]) and are given to both tools,
/// so what is compared is the ordering, not how properties are found. Except in
/// [`DRIVER_ONLY`].
const MACHINES: &[(&str, &str)] = &[
    (
        "h100-cuda13.0",
        r#"{"platform":"linux-x86_64","x86_64_level":4,"nvidia":{"cuda_version":"13.0","gpus":[{"compute_capability":"9.0"}]}}"#,
    ),
    (
        "h100-cuda12.8",
        r#"{"platform":"linux-x86_64","x86_64_level":4,"nvidia":{"cuda_version":"12.8","gpus":[{"compute_capability":"9.0"}]}}"#,
    ),
    (
        "rtx5090-cuda12.9",
        r#"{"platform":"linux-x86_64","x86_64_level":3,"nvidia":{"cuda_version":"12.9","gpus":[{"compute_capability":"12.0"}]}}"#,
    ),
    (
        "v100-cuda12.6",
        r#"{"platform":"linux-x86_64","x86_64_level":3,"nvidia":{"cuda_version":"12.6","gpus":[{"compute_capability":"7.0"}]}}"#,
    ),
    (
        "gtx1080ti-cuda12.8",
        r#"{"platform":"linux-x86_64","x86_64_level":3,"nvidia":{"cuda_version":"12.8","gpus":[{"compute_capability":"6.1"}]}}"#,
    ),
    (
        "mi300x-rocm6.4",
        r#"{"platform":"linux-x86_64","x86_64_level":4,"amd":{"rocm_version":"6.4.1","gpus":[{"gfx":"gfx942"}]}}"#,
    ),
    (
        "mi300x-no-rocm",
        r#"{"platform":"linux-x86_64","x86_64_level":4,"amd":{"gpus":[{"gfx":"gfx942"}]}}"#,
    ),
    (
        "arc-a770",
        r#"{"platform":"linux-x86_64","x86_64_level":3,"intel":{"gpus":[{"device_ip":"12.55.8","xpu_capable":true}]}}"#,
    ),
    ("cpu", r#"{"platform":"linux-x86_64","x86_64_level":3}"#),
];

/// Machines wheelgate knows by their driver version alone (a client described by token, a
/// container without libcuda), each with the same machine as NVIDIA's provider sees it: the
/// CUDA version its driver reports (`nvidia-smi`'s "CUDA Version"). wheelgate orders with the
/// first's properties, variantlib with the second's: how wheelgate derives a driver's CUDA
/// version is compared too (issue 44 item 1).
const DRIVER_ONLY: &[(&str, &str, &str)] = &[
    (
        "rtx5090-driver570",
        r#"{"platform":"linux-x86_64","x86_64_level":3,"nvidia":{"driver_version":"570.86.10","gpus":[{"compute_capability":"12.0"}]}}"#,
        r#"{"platform":"linux-x86_64","x86_64_level":3,"nvidia":{"cuda_version":"12.8","gpus":[{"compute_capability":"12.0"}]}}"#,
    ),
    (
        "h100-driver580",
        r#"{"platform":"linux-x86_64","x86_64_level":4,"nvidia":{"driver_version":"580.65.06","gpus":[{"compute_capability":"9.0"}]}}"#,
        r#"{"platform":"linux-x86_64","x86_64_level":4,"nvidia":{"cuda_version":"13.0","gpus":[{"compute_capability":"9.0"}]}}"#,
    ),
    (
        "t4-driver470",
        r#"{"platform":"linux-x86_64","x86_64_level":3,"nvidia":{"driver_version":"470.256.02","gpus":[{"compute_capability":"7.5"}]}}"#,
        r#"{"platform":"linux-x86_64","x86_64_level":3,"nvidia":{"cuda_version":"11.4","gpus":[{"compute_capability":"7.5"}]}}"#,
    ),
];

const PUBLISHED: &[&str] = &[
    "torch-2.8.0",
    "torch-2.9.0",
    "torch-2.10.0",
    "torchvision-0.24.0",
    "torchvision-0.25.0",
];

fn published_cases() -> Vec<Case> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/fixtures/variants-json");
    let mut cases = Vec::new();
    for name in PUBLISHED {
        let path = dir.join(format!("{name}-variants.json"));
        let Ok(text) = std::fs::read_to_string(&path) else {
            println!(
                "fixture {} is absent: PyTorch's files were not compared",
                path.display()
            );
            continue;
        };
        let (converted, renamed) = to_variantlib_schema(&serde_json::from_str(&text).unwrap());
        let converted = converted.to_string();
        let machines = MACHINES
            .iter()
            .map(|(machine, json)| (*machine, *json, None))
            .chain(
                DRIVER_ONLY
                    .iter()
                    .map(|(machine, json, provider)| (*machine, *json, Some(*provider))),
            );
        for (machine, json, provider) in machines {
            let properties = |json: &str| {
                let machine: Machine = serde_json::from_str(json).unwrap();
                flatten(&SupportedProperties::from_machine(&machine))
            };
            let supported = properties(json);
            let provider_supported = provider.map(properties);
            let case =
                |kind: &str, ours: &str, theirs: &str, renamed: BTreeMap<String, String>| Case {
                    name: format!("{kind}/{name}/{machine}"),
                    wheelgate_file: ours.to_string(),
                    variantlib_file: theirs.to_string(),
                    supported: supported.clone(),
                    provider_supported: provider_supported.clone(),
                    feature_priorities: json!({}),
                    property_priorities: json!({}),
                    renamed,
                };
            cases.push(case("published", &text, &text, BTreeMap::new()));
            cases.push(case("converted", &text, &converted, renamed.clone()));
            cases.push(case(
                "converted-both",
                &converted,
                &converted,
                BTreeMap::new(),
            ));
        }
    }
    cases
}

/// The properties in the order both tools read them: namespaces in lexical order (the file's
/// `default-priorities.namespace` orders them), features and values most preferred first.
fn flatten(supported: &SupportedProperties) -> Vec<(String, String, Vec<String>)> {
    let mut out = Vec::new();
    for namespace in supported.namespaces() {
        for feature in supported.features(namespace).unwrap_or_default() {
            out.push((
                namespace.to_string(),
                feature.name.clone(),
                feature.values.clone(),
            ));
        }
    }
    out
}

/// One of PyTorch's files in variantlib 0.2.2's schema (`v0.2.0.json`): providers keep
/// `requires` and `plugin-api`; a static namespace (`plugin-use: none`, `install-time: false`)
/// becomes `providers.<ns>.static-properties` with the values the file gave it (a top-level
/// `static-properties`, or `default-priorities.property` in `v0.0.2`); a variant without
/// properties is labelled `null`. Returns the labels renamed, wheelgate's → variantlib's.
fn to_variantlib_schema(file: &Value) -> (Value, BTreeMap<String, String>) {
    let priorities = &file["default-priorities"];
    let mut providers = Map::new();
    for (namespace, provider) in file["providers"].as_object().unwrap() {
        let is_static = provider.get("plugin-use") == Some(&json!("none"))
            || provider.get("install-time") == Some(&json!(false));
        let mut out = Map::new();
        if is_static {
            let values = file
                .get("static-properties")
                .and_then(|s| s.get(namespace))
                .or_else(|| priorities.get("property").and_then(|p| p.get(namespace)))
                .cloned()
                .unwrap_or_else(|| json!({}));
            out.insert("static-properties".into(), values);
        } else {
            for key in ["requires", "plugin-api"] {
                if let Some(value) = provider.get(key) {
                    out.insert(key.into(), value.clone());
                }
            }
        }
        providers.insert(namespace.clone(), Value::Object(out));
    }
    let mut variants = Map::new();
    let mut renamed = BTreeMap::new();
    for (label, properties) in file["variants"].as_object().unwrap() {
        let empty = properties.as_object().is_none_or(Map::is_empty);
        let label = if empty && label != "null" {
            renamed.insert(label.clone(), "null".to_string());
            "null".to_string()
        } else {
            label.clone()
        };
        variants.insert(label, properties.clone());
    }
    let converted = json!({
        "$schema": "https://variants-schema.wheelnext.dev/v0.2.0.json",
        "default-priorities": {"namespace": priorities["namespace"]},
        "providers": providers,
        "variants": variants,
    });
    (converted, renamed)
}

// --- Generated files -------------------------------------------------------------------------

/// `SplitMix64`: a seeded generator, so every run makes the same files.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n`.
    fn below(&mut self, n: usize) -> usize {
        usize::try_from(self.next() % n as u64).unwrap()
    }

    /// True with probability `percent` in 100.
    fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }

    /// A random order of `items`.
    fn shuffled<T: Clone>(&mut self, items: &[T]) -> Vec<T> {
        let mut out = items.to_vec();
        for i in (1..out.len()).rev() {
            let j = self.below(i + 1);
            out.swap(i, j);
        }
        out
    }

    /// A random non-empty subset of `items` (at most `most`), in random order.
    fn some<T: Clone>(&mut self, items: &[T], most: usize) -> Vec<T> {
        let n = 1 + self.below(most.min(items.len()));
        self.shuffled(items).into_iter().take(n).collect()
    }
}

const DYNAMIC: &[&str] = &["nvidia", "amd", "intel", "x86_64"];
const FEATURES: &[&str] = &["alpha", "beta", "gamma"];
const VALUES: &[&str] = &["v0", "v1", "v2", "v3", "v4"];
const STATIC: &str = "priority";
const STATIC_FEATURES: &[&str] = &["order", "tier"];
const STATIC_VALUES: &[&str] = &["1", "2", "3"];
const LABELS: &[&str] = &[
    "a", "b", "c", "d", "cu126", "cu128", "cu13", "x1", "x10", "x2", "m.1", "m_2", "z",
];

/// `GENERATED` files, each ordered for one generated machine, read in wheelgate's `v0.0.3`
/// schema by wheelgate and in `v0.2.0` by variantlib; and again with both reading the `v0.2.0`
/// file (named apart where a static namespace is used: `providers.<ns>.static-properties`).
fn generated_cases() -> Vec<Case> {
    let mut rng = Rng(0x5EED_0825);
    let mut cases = Vec::new();
    for index in 0..GENERATED {
        let namespaces = rng.some(DYNAMIC, 3);
        let with_static = rng.chance(50);
        let static_features: Vec<&str> = if with_static {
            STATIC_FEATURES[..=rng.below(2)].to_vec()
        } else {
            Vec::new()
        };
        let static_values: Vec<(&str, Vec<&str>)> = static_features
            .iter()
            .map(|&f| (f, rng.some(STATIC_VALUES, 3)))
            .collect();
        let mut all_namespaces: Vec<&str> = namespaces.clone();
        if with_static {
            all_namespaces.push(STATIC);
        }
        let namespace_order = rng.shuffled(&all_namespaces);

        let supported = generated_machine(&mut rng, &namespaces);

        // The publisher's preferences among features and values.
        let mut feature_priorities = Map::new();
        let mut property_priorities = Map::new();
        for &namespace in &namespaces {
            if rng.chance(50) {
                feature_priorities.insert(namespace.into(), json!(rng.some(FEATURES, 2)));
            }
            if rng.chance(50) {
                let feature = FEATURES[rng.below(FEATURES.len())];
                property_priorities
                    .insert(namespace.into(), json!({ feature: rng.some(VALUES, 3) }));
            }
        }

        let variants = generated_variants(&mut rng, &namespaces, &static_values);

        let dynamic_provider = |namespace: &str| {
            json!({
                "requires": [format!("{namespace}-variant-provider>=0.1")],
                "plugin-api": format!("{namespace}_variant_provider.plugin:Plugin"),
            })
        };
        let mut ours_providers = Map::new();
        let mut theirs_providers = Map::new();
        for &namespace in &namespaces {
            ours_providers.insert(namespace.into(), dynamic_provider(namespace));
            theirs_providers.insert(namespace.into(), dynamic_provider(namespace));
        }
        let static_properties: Map<String, Value> = static_values
            .iter()
            .map(|(feature, values)| ((*feature).to_string(), json!(values)))
            .collect();
        if with_static {
            ours_providers.insert(
                STATIC.into(),
                json!({"install-time": false, "requires": []}),
            );
            let mut theirs = json!({"static-properties": static_properties});
            if static_features.len() > 1 {
                theirs["feature-order"] = json!(static_features);
            }
            theirs_providers.insert(STATIC.into(), theirs);
        }
        let ours = json!({
            "$schema": "https://variants-schema.wheelnext.dev/v0.0.3.json",
            "default-priorities": {
                "namespace": namespace_order,
                "feature": feature_priorities,
                "property": property_priorities,
            },
            "providers": ours_providers,
            "static-properties": if with_static { json!({STATIC: static_properties}) } else { json!({}) },
            "variants": variants,
        })
        .to_string();
        let theirs = json!({
            "$schema": "https://variants-schema.wheelnext.dev/v0.2.0.json",
            "default-priorities": {"namespace": namespace_order},
            "providers": theirs_providers,
            "variants": variants,
        })
        .to_string();
        let case = |name: String, ours: &str| Case {
            name,
            wheelgate_file: ours.to_string(),
            variantlib_file: theirs.clone(),
            supported: supported.clone(),
            provider_supported: None,
            feature_priorities: Value::Object(feature_priorities.clone()),
            property_priorities: Value::Object(property_priorities.clone()),
            renamed: BTreeMap::new(),
        };
        cases.push(case(format!("generated/{index}"), &ours));
        // Both reading variantlib's schema: only where no priorities need carrying over (0.2.0
        // has no place for them), and named apart where a static namespace is used.
        if feature_priorities.is_empty() && property_priorities.is_empty() {
            let kind = if with_static {
                "generated-v0.2"
            } else {
                "generated-v0.2-dynamic"
            };
            cases.push(case(format!("{kind}/{index}"), &theirs));
        }
    }
    cases
}

/// A generated machine's properties: some namespaces or features missing, values a random
/// subset in a random order, now and then none at all.
fn generated_machine(rng: &mut Rng, namespaces: &[&str]) -> Vec<(String, String, Vec<String>)> {
    let mut supported = Vec::new();
    for &namespace in namespaces {
        if rng.chance(10) {
            continue;
        }
        for feature in rng.shuffled(FEATURES) {
            if rng.chance(10) {
                continue;
            }
            let values = if rng.chance(5) {
                Vec::new()
            } else {
                let n = 3 + rng.below(3);
                rng.shuffled(VALUES).into_iter().take(n).collect()
            };
            supported.push((
                namespace.to_string(),
                feature.to_string(),
                values.into_iter().map(String::from).collect(),
            ));
        }
    }
    supported
}

/// A generated file's variants: a null one or not, identical properties under two labels now
/// and then, a static namespace's value in most.
fn generated_variants(
    rng: &mut Rng,
    namespaces: &[&str],
    static_values: &[(&str, Vec<&str>)],
) -> Map<String, Value> {
    let mut variants = Map::new();
    if rng.chance(60) {
        variants.insert("null".into(), json!({}));
    }
    let count = 3 + rng.below(6);
    for label in rng.shuffled(LABELS).into_iter().take(count) {
        let properties = if !variants.is_empty() && rng.chance(15) {
            let existing: Vec<&Value> = variants
                .iter()
                .filter(|(l, _)| *l != "null")
                .map(|(_, p)| p)
                .collect();
            existing
                .get(rng.below(existing.len().max(1)))
                .map(|&p| p.clone())
        } else {
            None
        };
        let properties = properties.unwrap_or_else(|| {
            let mut properties = Map::new();
            for &namespace in &rng.some(namespaces, 2) {
                let mut features = Map::new();
                for feature in rng.some(FEATURES, 2) {
                    features.insert(feature.into(), json!(rng.some(VALUES, 3)));
                }
                properties.insert(namespace.into(), Value::Object(features));
            }
            if !static_values.is_empty() && rng.chance(70) {
                let (feature, values) = &static_values[rng.below(static_values.len())];
                properties.insert(
                    STATIC.into(),
                    json!({ *feature: [values[rng.below(values.len())]] }),
                );
            }
            Value::Object(properties)
        });
        variants.insert(label.into(), properties);
    }
    variants
}

// --- Validation ------------------------------------------------------------------------------

/// Files on the edges of validation, the same text to both (variantlib's schema, which
/// wheelgate reads too), for a machine supporting `nvidia :: sm_arch :: 90_real` and
/// `nvidia :: cuda :: 12`.
fn validation_cases() -> Vec<Case> {
    let head = r#""$schema": "https://variants-schema.wheelnext.dev/v0.2.0.json",
        "default-priorities": {"namespace": ["nvidia"]},
        "providers": {"nvidia": {"requires": ["nvidia-variant-provider"]}}"#;
    let files: &[(&str, String)] = &[
        (
            "plain",
            format!(
                r#"{{{head}, "variants": {{"null": {{}}, "cu": {{"nvidia": {{"sm_arch": ["90_real"]}}}}}}}}"#
            ),
        ),
        (
            "duplicate-label",
            format!(
                r#"{{{head}, "variants": {{"cu": {{"nvidia": {{"sm_arch": ["80_real"]}}}}, "cu": {{"nvidia": {{"sm_arch": ["90_real"]}}}}}}}}"#
            ),
        ),
        (
            "empty-value-list",
            format!(
                r#"{{{head}, "variants": {{"cu": {{"nvidia": {{"sm_arch": [], "cuda": ["12"]}}}}, "cu2": {{"nvidia": {{"sm_arch": ["90_real"]}}}}}}}}"#
            ),
        ),
        (
            "zero-properties-not-null",
            format!(
                r#"{{{head}, "variants": {{"00000000": {{}}, "cu": {{"nvidia": {{"sm_arch": ["90_real"]}}}}}}}}"#
            ),
        ),
        (
            "label-upper-case",
            format!(
                r#"{{{head}, "variants": {{"CU": {{"nvidia": {{"sm_arch": ["90_real"]}}}}}}}}"#
            ),
        ),
        (
            "label-dash",
            format!(
                r#"{{{head}, "variants": {{"cu-12": {{"nvidia": {{"sm_arch": ["90_real"]}}}}}}}}"#
            ),
        ),
        (
            "value-upper-case",
            format!(
                r#"{{{head}, "variants": {{"cu": {{"nvidia": {{"sm_arch": ["90_REAL"]}}}}}}}}"#
            ),
        ),
        (
            "feature-dash",
            format!(
                r#"{{{head}, "variants": {{"cu": {{"nvidia": {{"sm-arch": ["90_real"]}}}}}}}}"#
            ),
        ),
        (
            "null-with-properties",
            format!(
                r#"{{{head}, "variants": {{"null": {{"nvidia": {{"sm_arch": ["90_real"]}}}}}}}}"#
            ),
        ),
        (
            "values-not-a-list",
            format!(r#"{{{head}, "variants": {{"cu": {{"nvidia": {{"sm_arch": "90_real"}}}}}}}}"#),
        ),
        ("no-variants", format!("{{{head}}}")),
        (
            "unknown-schema",
            r#"{"$schema": "https://variants-schema.wheelnext.dev/v9.0.0.json",
                "default-priorities": {"namespace": ["nvidia"]},
                "providers": {"nvidia": {"requires": ["nvidia-variant-provider"]}},
                "variants": {"null": {}, "cu": {"nvidia": {"sm_arch": ["90_real"]}}}}"#
                .to_string(),
        ),
        (
            "no-default-priorities",
            r#"{"providers": {"nvidia": {"requires": ["p"]}}, "variants": {"null": {}}}"#
                .to_string(),
        ),
        ("not-json", "{\"variants\": ".to_string()),
    ];
    files
        .iter()
        .map(|(name, text)| Case {
            name: format!("validation/{name}"),
            wheelgate_file: text.clone(),
            variantlib_file: text.clone(),
            supported: vec![
                ("nvidia".into(), "sm_arch".into(), vec!["90_real".into()]),
                ("nvidia".into(), "cuda".into(), vec!["12".into()]),
            ],
            provider_supported: None,
            feature_priorities: json!({}),
            property_priorities: json!({}),
            renamed: BTreeMap::new(),
        })
        .collect()
}
