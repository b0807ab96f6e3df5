//! PEP 825 variant ordering: which variants of a release a machine can use, best first, and
//! a reason a person can read for every one it cannot.
//!
//! The algorithm, PEP 825 "Variant ordering":
//!
//! 1. A variant is compatible when, for every feature it lists, at least one of its values is
//!    among the machine's supported values (features AND, values OR). A variant with no
//!    properties (`null`) is always compatible. A namespace the machine knows nothing about
//!    makes the variant incompatible, unless the file declares it static.
//! 2. For each feature of a compatible variant, its best value (lowest position in the
//!    machine's ordered list) gives the key `(namespace index, feature index, value index)`:
//!    namespaces in the file's `default-priorities.namespace` order, features in the file's
//!    `default-priorities.feature` order then the provider's, values in the file's
//!    `default-priorities.property` order then the provider's.
//! 3. Each variant's keys are sorted ascending and variants compared lexicographically by
//!    them; when one list is a prefix of the other the longer wins; when equal, the lower
//!    label wins.
//! 4. Hence `null` sorts after every compatible variant, and non-variant wheels come after
//!    `null` (see [`VariantOrder::rank`]). Platform and build tags order wheels only within
//!    one label.

use std::cmp::Ordering;
use std::collections::{HashMap, HashSet};
use std::fmt;

use crate::machine::Machine;

use super::properties::{SupportedFeature, SupportedProperties};
use super::schema::{Properties, VariantsFile};

/// Where one property stands in the machine's preferences; lower is better (PEP 825 step 2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PropertyKey {
    /// Position of the namespace in `default-priorities.namespace`.
    pub namespace: usize,
    /// Position of the feature in the namespace's feature order.
    pub feature: usize,
    /// Position of the best matching value in the feature's value order.
    pub value: usize,
}

/// The best supported value of one feature of a compatible variant, with its key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MatchedProperty {
    /// The property's namespace (`nvidia`).
    pub namespace: String,
    /// The property's feature (`cuda_version_lower_bound`).
    pub feature: String,
    /// The best value the machine supports.
    pub value: String,
    /// Where the property stands in the machine's preferences.
    pub key: PropertyKey,
}

impl fmt::Display for MatchedProperty {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} :: {} :: {}",
            self.namespace, self.feature, self.value
        )
    }
}

/// A variant the machine can use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RankedVariant {
    /// The variant label (`cuda12.8`).
    pub label: String,
    /// One entry per feature the variant lists, sorted by key: the sort key of PEP 825.
    /// Empty for the null variant.
    pub matched: Vec<MatchedProperty>,
}

impl RankedVariant {
    /// Whether this is the variant without properties (`null`, torch 2.8's `00000000`).
    pub fn is_null(&self) -> bool {
        self.matched.is_empty()
    }

    /// The PEP 825 sort key: the keys of [`Self::matched`], ascending.
    pub fn key(&self) -> Vec<PropertyKey> {
        self.matched.iter().map(|m| m.key).collect()
    }
}

/// A variant the machine cannot use, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RejectedVariant {
    /// The variant label (`cuda13.0`).
    pub label: String,
    /// Every unmet requirement, separated by `; ` (`needs nvidia::cuda_version_lower_bound
    /// 13.0, the machine's driver supports CUDA 12.8`).
    pub reason: String,
}

impl fmt::Display for RejectedVariant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.label, self.reason)
    }
}

/// The variants of one release ordered for one machine (PEP 825).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct VariantOrder {
    /// The compatible variants, best first; the null variant, if the file has one, is last.
    pub compatible: Vec<RankedVariant>,
    /// The incompatible variants, by label.
    pub incompatible: Vec<RejectedVariant>,
}

impl VariantOrder {
    /// The compatible labels, best first.
    pub fn labels(&self) -> Vec<&str> {
        self.compatible.iter().map(|v| v.label.as_str()).collect()
    }

    /// The best compatible variant.
    pub fn best(&self) -> Option<&RankedVariant> {
        self.compatible.first()
    }

    /// The position of a wheel group in the order, for sorting wheels (lower is better):
    /// `Some(label)` for a variant wheel, `None` for a non-variant wheel, which ranks after
    /// every compatible variant including `null` (PEP 825). `None` as the result means the
    /// label is incompatible or unknown, and its wheels must not be installed.
    pub fn rank(&self, label: Option<&str>) -> Option<usize> {
        match label {
            Some(label) => self.compatible.iter().position(|v| v.label == label),
            None => Some(self.compatible.len()),
        }
    }

    /// Why `label` was rejected, if it was.
    pub fn rejection(&self, label: &str) -> Option<&RejectedVariant> {
        self.incompatible.iter().find(|v| v.label == label)
    }
}

/// Orders the variants of `file` for a machine supporting `supported` (PEP 825 "Variant
/// ordering"). The file's static namespaces are merged in first
/// ([`SupportedProperties::with_static_properties`]).
pub fn order_variants(file: &VariantsFile, supported: &SupportedProperties) -> VariantOrder {
    let supported = supported.with_static_properties(file);
    let mut ranks = Ranks::default();
    let mut order = VariantOrder::default();
    for (label, properties) in &file.variants {
        match match_variant(file, &supported, &mut ranks, properties) {
            Ok(mut matched) => {
                matched.sort_by_key(|m| m.key);
                order.compatible.push(RankedVariant {
                    label: label.clone(),
                    matched,
                });
            }
            Err(failures) => order.incompatible.push(RejectedVariant {
                label: label.clone(),
                reason: failures.join("; "),
            }),
        }
    }
    order.compatible.sort_by(compare);
    tracing::debug!(
        compatible = order.compatible.len(),
        incompatible = order.incompatible.len(),
        best = order.best().map(|v| v.label.as_str()),
        "ordered wheel variants"
    );
    order
}

/// The feature and value orders as positions, made once per namespace and per feature for all
/// the variants of a file: each lookup is then constant time, so ordering costs what the file
/// lists, not that times the length of the machine's lists (a hostile `sm_arch` list of 70,000
/// values once cost seconds per machine).
#[derive(Default)]
struct Ranks<'a> {
    features: HashMap<&'a str, HashMap<&'a str, usize>>,
    values: HashMap<(&'a str, &'a str), HashMap<&'a str, usize>>,
}

impl<'a> Ranks<'a> {
    fn features(
        &mut self,
        file: &'a VariantsFile,
        namespace: &'a str,
        supported: &'a [SupportedFeature],
    ) -> &HashMap<&'a str, usize> {
        self.features
            .entry(namespace)
            .or_insert_with(|| feature_order(file, namespace, supported))
    }

    fn values(
        &mut self,
        file: &'a VariantsFile,
        namespace: &'a str,
        supported: &'a SupportedFeature,
    ) -> &HashMap<&'a str, usize> {
        self.values
            .entry((namespace, supported.name.as_str()))
            .or_insert_with(|| value_order(file, namespace, supported))
    }
}

/// PEP 825 steps 1 and 2 for one variant: the best supported value of every feature it lists,
/// or every unmet requirement, each as a phrase.
fn match_variant<'a>(
    file: &'a VariantsFile,
    supported: &'a SupportedProperties,
    ranks: &mut Ranks<'a>,
    properties: &'a Properties,
) -> Result<Vec<MatchedProperty>, Vec<String>> {
    let mut matched = Vec::new();
    let mut failures = Vec::new();
    for (namespace, features) in properties {
        if features.is_empty() {
            continue;
        }
        let Some(namespace_index) = file
            .namespace_priorities
            .iter()
            .position(|n| n == namespace)
        else {
            failures.push(format!(
                "uses namespace `{namespace}`, which the file's `default-priorities.namespace` does not list"
            ));
            continue;
        };
        let Some(supported_features) = supported.features(namespace) else {
            let needs: Vec<String> = features
                .iter()
                .map(|(feature, values)| need(namespace, feature, values))
                .collect();
            let why = supported.gap(namespace, None).map_or_else(
                || format!("the machine reports nothing for namespace `{namespace}`"),
                ToString::to_string,
            );
            failures.push(format!("needs {}, {why}", needs.join(" and ")));
            continue;
        };
        let feature_index = |ranks: &mut Ranks<'a>, feature: &str| {
            ranks
                .features(file, namespace, supported_features)
                .get(feature)
                .copied()
                .unwrap_or(usize::MAX)
        };
        for (feature, values) in features {
            let Some(supported_feature) = supported_features.iter().find(|f| &f.name == feature)
            else {
                let why = supported.gap(namespace, Some(feature)).map_or_else(
                    || format!("the machine reports no `{namespace}::{feature}`"),
                    ToString::to_string,
                );
                failures.push(format!("needs {}, {why}", need(namespace, feature, values)));
                continue;
            };
            // The best value is the supported one earliest in the value order (which holds
            // exactly the supported values).
            let value_order = ranks.values(file, namespace, supported_feature);
            let best = values
                .iter()
                .filter_map(|value| value_order.get(value.as_str()).map(|&index| (index, value)))
                .min();
            let Some((value_index, value)) = best else {
                failures.push(format!(
                    "needs {}, {}",
                    need(namespace, feature, values),
                    supported_feature.origin
                ));
                continue;
            };
            matched.push(MatchedProperty {
                namespace: namespace.clone(),
                feature: feature.clone(),
                value: value.clone(),
                key: PropertyKey {
                    namespace: namespace_index,
                    feature: feature_index(ranks, feature),
                    value: value_index,
                },
            });
        }
    }
    if failures.is_empty() {
        Ok(matched)
    } else {
        Err(failures)
    }
}

/// [`order_variants`] for a machine, with the properties the reference providers would report
/// on it ([`SupportedProperties::from_machine`]).
pub fn order_variants_for_machine(file: &VariantsFile, machine: &Machine) -> VariantOrder {
    order_variants(file, &SupportedProperties::from_machine(machine))
}

/// PEP 825 step 3: lexicographic on the sorted keys, the longer list first when one is a
/// prefix of the other, then the lower label.
fn compare(a: &RankedVariant, b: &RankedVariant) -> Ordering {
    for (x, y) in a.matched.iter().zip(&b.matched) {
        match x.key.cmp(&y.key) {
            Ordering::Equal => {}
            unequal => return unequal,
        }
    }
    b.matched
        .len()
        .cmp(&a.matched.len())
        .then_with(|| a.label.cmp(&b.label))
}

/// The features of a namespace in order, as positions: the file's
/// `default-priorities.feature`, then the provider's order for the rest.
fn feature_order<'a>(
    file: &'a VariantsFile,
    namespace: &str,
    supported: &'a [SupportedFeature],
) -> HashMap<&'a str, usize> {
    let preferred = file
        .feature_priorities
        .get(namespace)
        .into_iter()
        .flatten()
        .map(String::as_str);
    positions(preferred.chain(supported.iter().map(|f| f.name.as_str())))
}

/// The supported values of a feature in order, as positions: the file's
/// `default-priorities.property` among them, then the provider's order for the rest.
fn value_order<'a>(
    file: &'a VariantsFile,
    namespace: &str,
    supported: &'a SupportedFeature,
) -> HashMap<&'a str, usize> {
    let supported_values: HashSet<&str> = supported.values.iter().map(String::as_str).collect();
    let preferred = file
        .property_priorities
        .get(namespace)
        .and_then(|features| features.iter().find(|f| f.name == supported.name))
        .into_iter()
        .flat_map(|preferred| preferred.values.iter().map(String::as_str))
        .filter(|value| supported_values.contains(value));
    positions(preferred.chain(supported.values.iter().map(String::as_str)))
}

/// Each name's first position in `names`, counting distinct names only.
fn positions<'a>(names: impl Iterator<Item = &'a str>) -> HashMap<&'a str, usize> {
    let mut out = HashMap::new();
    for name in names {
        let next = out.len();
        out.entry(name).or_insert(next);
    }
    out
}

/// `nvidia::sm_arch 75_real, 80_real, 86_real or 4 more`.
fn need(namespace: &str, feature: &str, values: &[String]) -> String {
    const SHOWN: usize = 4;
    let listed = if values.len() <= SHOWN {
        match values.split_last() {
            Some((last, [])) => last.clone(),
            Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
            None => String::new(),
        }
    } else {
        format!(
            "{} or {} more",
            values[..SHOWN - 1].join(", "),
            values.len() - (SHOWN - 1)
        )
    };
    format!("{namespace}::{feature} {listed}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::variants::fixture;
    use crate::variants::schema::parse_variants_json;

    fn machine(json: &str) -> Machine {
        serde_json::from_str(json).unwrap()
    }

    fn nvidia(cuda: &str, capabilities: &[&str]) -> Machine {
        let gpus: Vec<String> = capabilities
            .iter()
            .map(|cc| format!(r#"{{"compute_capability":"{cc}"}}"#))
            .collect();
        machine(&format!(
            r#"{{"platform":"linux-x86_64","x86_64_level":3,"nvidia":{{"cuda_version":"{cuda}","gpus":[{}]}}}}"#,
            gpus.join(",")
        ))
    }

    fn order(file: &VariantsFile, machine: &Machine) -> Vec<String> {
        order_variants_for_machine(file, machine)
            .labels()
            .into_iter()
            .map(ToString::to_string)
            .collect()
    }

    fn load(name: &str) -> Option<VariantsFile> {
        fixture(name).map(|text| parse_variants_json(&text).unwrap())
    }

    #[test]
    fn worked_results_on_torch_2_10() {
        for name in [
            "torch-2.10.0-variants.json",
            "torchvision-0.25.0-variants.json",
        ] {
            let Some(file) = load(name) else {
                return;
            };
            let cases: [(&str, &str, &[&str]); 4] = [
                ("13.0", "9.0", &["cuda13.0", "cuda12.8", "cuda12.6", "null"]),
                ("12.8", "9.0", &["cuda12.8", "cuda12.6", "null"]),
                ("12.8", "12.0", &["cuda12.8", "null"]),
                ("13.0", "7.0", &["cuda12.8", "cuda12.6", "null"]),
            ];
            for (cuda, cc, expected) in cases {
                assert_eq!(
                    order(&file, &nvidia(cuda, &[cc])),
                    expected,
                    "{name}: CUDA {cuda}, CC {cc}"
                );
            }
        }
    }

    #[test]
    fn explains_rejections_on_torch_2_10() {
        let Some(file) = load("torch-2.10.0-variants.json") else {
            return;
        };
        let result = order_variants_for_machine(&file, &nvidia("12.8", &["9.0"]));
        assert_eq!(
            result.rejection("cuda13.0").unwrap().to_string(),
            "cuda13.0: needs nvidia::cuda_version_lower_bound 13.0, the machine's driver supports CUDA 12.8"
        );
        assert_eq!(
            result.rejection("xpu").unwrap().reason,
            "needs intel::device_ip 12.55.8, 12.60.7, 12.71.4 or 5 more, the machine has no Intel GPU"
        );
        assert!(
            result
                .rejection("rocm7.1")
                .unwrap()
                .reason
                .ends_with("the machine has no AMD GPU")
        );

        let result = order_variants_for_machine(&file, &nvidia("13.0", &["7.0"]));
        assert_eq!(
            result.rejection("cuda13.0").unwrap().reason,
            "needs nvidia::sm_arch 75_real, 80_real, 86_real or 4 more, the machine's GPU has compute capability 7.0"
        );
        let result = order_variants_for_machine(&file, &nvidia("12.4", &["8.6", "9.0"]));
        assert_eq!(result.labels(), ["null"]);
        assert!(
            result.rejection("cuda12.6").unwrap().reason.contains(
                "the machine's GPUs have compute capabilities 8.6, 9.0 and a build must cover all of them"
            )
        );
    }

    #[test]
    fn keys_follow_pep_825() {
        let Some(file) = load("torch-2.10.0-variants.json") else {
            return;
        };
        let result = order_variants_for_machine(&file, &nvidia("13.0", &["9.0"]));
        let key = |namespace, feature, value| PropertyKey {
            namespace,
            feature,
            value,
        };
        // nvidia is namespace 0, priority 3; lower bound is feature 0, sm_arch 2; 13.0 is the
        // first lower-bound value, 12.0 the 23rd (13.0, 13, 12.20, ..., 12.0).
        assert_eq!(
            result.compatible[0].key(),
            [key(0, 0, 0), key(0, 2, 0), key(3, 0, 0)]
        );
        assert_eq!(
            result.compatible[1].key(),
            [key(0, 0, 22), key(0, 2, 0), key(3, 0, 1)]
        );
        assert!(result.compatible[3].is_null());
        assert_eq!(
            result.compatible[1].matched[0].to_string(),
            "nvidia :: cuda_version_lower_bound :: 12.0"
        );
    }

    #[test]
    fn torch_2_8_uses_its_own_labels() {
        let Some(file) = load("torch-2.8.0-variants.json") else {
            return;
        };
        assert_eq!(
            order(&file, &nvidia("12.8", &["9.0"])),
            ["cu128", "cu126", "00000000"]
        );
        assert_eq!(
            order(&file, &nvidia("12.9", &["8.6"])),
            ["cu129", "cu128", "cu126", "00000000"]
        );
        // cu126 has no sm_120; cu129 needs 12.9 and is preferred to cu128 by its bound.
        assert_eq!(
            order(&file, &nvidia("13.0", &["12.0"])),
            ["cu129", "cu128", "00000000"]
        );
        let result = order_variants_for_machine(&file, &nvidia("12.8", &["9.0"]));
        assert_eq!(
            result.rejection("cu129").unwrap().reason,
            "needs nvidia::cuda_version_lower_bound 12.9, the machine's driver supports CUDA 12.8"
        );
    }

    #[test]
    fn torch_2_9_uses_its_v0_0_2_priorities() {
        for name in [
            "torch-2.9.0-variants.json",
            "torchvision-0.24.0-variants.json",
        ] {
            let Some(file) = load(name) else {
                return;
            };
            assert_eq!(
                order(&file, &nvidia("13.0", &["9.0"])),
                ["cuda13.0", "cuda12.8", "cuda12.6", "null"],
                "{name}"
            );
            // Both 12.x builds need only CUDA 12.0; `priority :: order` prefers cuda12.8.
            assert_eq!(
                order(&file, &nvidia("12.6", &["8.6"])),
                ["cuda12.8", "cuda12.6", "null"],
                "{name}"
            );
            // Pascal: only cuda12.6 still has sm_60.
            assert_eq!(
                order(&file, &nvidia("12.8", &["6.1"])),
                ["cuda12.6", "null"],
                "{name}"
            );
        }
    }

    #[test]
    fn driver_only_machine_is_ordered_conservatively() {
        let Some(file) = load("torch-2.10.0-variants.json") else {
            return;
        };
        let driver = |version: &str| {
            machine(&format!(
                r#"{{"platform":"linux-x86_64","nvidia":{{"driver_version":"{version}","gpus":[{{"compute_capability":"9.0"}}]}}}}"#
            ))
        };
        assert_eq!(
            order(&file, &driver("580.65.06")),
            ["cuda13.0", "cuda12.8", "cuda12.6", "null"]
        );
        assert_eq!(
            order(&file, &driver("570.86.10")),
            ["cuda12.8", "cuda12.6", "null"]
        );
        assert_eq!(order(&file, &driver("470.42.01")), ["null"]);
    }

    #[test]
    fn driver_570_alone_gets_cuda_12_8_not_null() {
        // An RTX 5090 on driver 570 known by its driver version alone: the driver's CUDA is
        // 12.8 (its branch's, as nvidia-smi reports it), so torch 2.8's `cu128` (lower bound
        // 12.8) is served, as NVIDIA's provider and variantlib would. Before, the driver was
        // taken to support CUDA 12.0 only and the CPU build `00000000` was served.
        let Some(file) = load("torch-2.8.0-variants.json") else {
            return;
        };
        let rtx_5090 = machine(
            r#"{"platform":"linux-x86_64","nvidia":{"driver_version":"570.86.10","gpus":[{"compute_capability":"12.0"}]}}"#,
        );
        assert_eq!(order(&file, &rtx_5090), ["cu128", "00000000"]);
    }

    #[test]
    fn amd_gpu_gets_the_rocm_of_its_installed_version() {
        let amd = |gfx: &str, rocm: Option<&str>| {
            let rocm = rocm.map_or(String::new(), |r| format!(r#""rocm_version":"{r}","#));
            machine(&format!(
                r#"{{"platform":"linux-x86_64","amd":{{{rocm}"gpus":[{{"gfx":"{gfx}"}}]}}}}"#
            ))
        };
        if let Some(file) = load("torch-2.9.0-variants.json") {
            assert_eq!(
                order(&file, &amd("gfx942", Some("6.4.1"))),
                ["rocm6.4", "null"]
            );
            assert_eq!(
                order(&file, &amd("gfx942", Some("6.3"))),
                ["rocm6.3", "null"]
            );
            // gfx950 (MI355X) is not in torch 2.9's ROCm builds.
            let result = order_variants_for_machine(&file, &amd("gfx950", Some("6.4")));
            assert_eq!(result.labels(), ["null"]);
            assert!(
                result
                    .rejection("rocm6.4")
                    .unwrap()
                    .reason
                    .ends_with("the machine's AMD GPU is gfx950")
            );
        }
        if let Some(file) = load("torch-2.10.0-variants.json") {
            assert_eq!(
                order(&file, &amd("gfx942", Some("7.1.0"))),
                ["rocm7.1", "null"]
            );
            assert_eq!(
                order(&file, &amd("gfx1151", Some("7.0.2"))),
                ["rocm7.0", "null"]
            );
            // The AMD provider matches only an installed ROCm.
            let result = order_variants_for_machine(&file, &amd("gfx942", None));
            assert_eq!(result.labels(), ["null"]);
            assert!(
                result
                    .rejection("rocm7.0")
                    .unwrap()
                    .reason
                    .contains("the machine has no ROCm installed")
            );
        }
    }

    #[test]
    fn intel_gpu_gets_xpu_by_device_ip() {
        let intel = |ip: &str| {
            machine(&format!(
                r#"{{"platform":"linux-x86_64","intel":{{"gpus":[{{"name":"Arc B580","device_ip":"{ip}","xpu_capable":true}}]}}}}"#
            ))
        };
        if let Some(file) = load("torch-2.10.0-variants.json") {
            assert_eq!(order(&file, &intel("20.1.0")), ["xpu", "null"]);
            assert_eq!(order(&file, &intel("30.0.4")), ["xpu", "null"]);
        }
        if let Some(file) = load("torch-2.9.0-variants.json") {
            assert_eq!(order(&file, &intel("20.1.0")), ["xpu", "null"]);
            // Device IP 30.x is new in torch 2.10's XPU build.
            assert_eq!(order(&file, &intel("30.0.4")), ["null"]);
        }
    }

    #[test]
    fn nvidia_before_intel_as_the_file_says() {
        let Some(file) = load("torch-2.10.0-variants.json") else {
            return;
        };
        let both = machine(
            r#"{"platform":"linux-x86_64",
                "nvidia":{"cuda_version":"12.8","gpus":[{"compute_capability":"8.9"}]},
                "intel":{"gpus":[{"device_ip":"12.71.4","integrated":true,"xpu_capable":true}]}}"#,
        );
        assert_eq!(order(&file, &both), ["cuda12.8", "cuda12.6", "xpu", "null"]);
    }

    #[test]
    fn cpu_only_machine_gets_null_only() {
        for name in [
            "torch-2.8.0-variants.json",
            "torch-2.9.0-variants.json",
            "torch-2.10.0-variants.json",
        ] {
            let Some(file) = load(name) else {
                return;
            };
            let cpu = Machine::cpu_only("linux-x86_64".parse().unwrap());
            let result = order_variants_for_machine(&file, &cpu);
            let expected = if name.contains("2.8.0") {
                "00000000"
            } else {
                "null"
            };
            assert_eq!(result.labels(), [expected], "{name}");
            assert_eq!(result.incompatible.len(), file.variants.len() - 1);
            assert!(
                result
                    .rejection(if expected == "null" {
                        "cuda12.8"
                    } else {
                        "cu128"
                    })
                    .unwrap()
                    .reason
                    .ends_with("the machine has no NVIDIA driver")
            );
        }
    }

    #[test]
    fn non_variant_wheels_rank_after_null() {
        let Some(file) = load("torch-2.10.0-variants.json") else {
            return;
        };
        let result = order_variants_for_machine(&file, &nvidia("12.8", &["9.0"]));
        assert_eq!(result.rank(Some("cuda12.8")), Some(0));
        assert_eq!(result.rank(Some("null")), Some(2));
        assert_eq!(result.rank(None), Some(3));
        assert_eq!(result.rank(Some("cuda13.0")), None);
        assert_eq!(result.rank(Some("cuda99.9")), None);
    }

    /// Hand-written files exercising rules PyTorch's files do not reach.
    fn snippet(variants: &str, extra: &str) -> VariantsFile {
        parse_variants_json(&format!(
            r#"{{"$schema": "https://variants-schema.wheelnext.dev/peps/825/v0.1.1.json",
                "default-priorities": {{"namespace": ["x86_64", "aarch64"] {extra}}},
                "variants": {variants}}}"#
        ))
        .unwrap()
    }

    fn x86(level: u8) -> SupportedProperties {
        let mut machine = Machine::cpu_only("linux-x86_64".parse().unwrap());
        machine.x86_64_level = Some(level);
        SupportedProperties::from_machine(&machine)
    }

    #[test]
    fn pep_825_snippet_orders_by_best_value() {
        let file = snippet(
            r#"{"x86_64_v2": {"x86_64": {"level": ["v2"]}},
                "x86_64_v4": {"x86_64": {"level": ["v4"]}},
                "x86_64_v3": {"x86_64": {"level": ["v3"]}},
                "multi": {"x86_64": {"level": ["v1", "v3"]}},
                "null": {}}"#,
            "",
        );
        let result = order_variants(&file, &x86(3));
        // `multi` matches v3 as well as `x86_64_v3`; equal keys, so the lower label wins.
        assert_eq!(result.labels(), ["multi", "x86_64_v3", "x86_64_v2", "null"]);
        assert_eq!(
            result.rejection("x86_64_v4").unwrap().reason,
            "needs x86_64::level v4, the machine's CPU is x86-64-v3"
        );
    }

    #[test]
    fn longer_key_wins_on_a_common_prefix() {
        let file = snippet(
            r#"{"plain": {"x86_64": {"level": ["v3"]}},
                "more": {"x86_64": {"level": ["v3"]}, "static": {"tuned": ["yes"]}}}"#,
            r#", "feature": {}"#,
        );
        // `static` must be listed among the namespaces to be usable.
        let rejected = order_variants(&file, &x86(3));
        assert_eq!(rejected.labels(), ["plain"]);
        assert!(
            rejected
                .rejection("more")
                .unwrap()
                .reason
                .contains("`default-priorities.namespace` does not list")
        );

        let file = parse_variants_json(
            r#"{"default-priorities": {"namespace": ["x86_64", "static"]},
                "static-properties": {"static": {"tuned": ["yes"]}},
                "variants": {"plain": {"x86_64": {"level": ["v3"]}},
                             "more": {"x86_64": {"level": ["v3"]}, "static": {"tuned": ["yes"]}}}}"#,
        )
        .unwrap();
        assert_eq!(order_variants(&file, &x86(3)).labels(), ["more", "plain"]);
    }

    /// A static namespace with as many values as a file may hold, in every variant and in the
    /// file's property priorities: the order still follows the priorities (the best value is
    /// the one listed first), and a list past the cap refuses the whole file.
    #[test]
    fn long_value_lists_order_by_priority_and_past_the_cap_are_refused() {
        use crate::variants::schema::MAX_ENTRIES;
        let values =
            |count: usize| -> Vec<String> { (0..count).map(|i| format!("\"{i}_real\"")).collect() };
        let file = |count: usize| {
            let all = values(count).join(",");
            // The priorities list the values backwards: the last value is the best.
            let mut backwards = values(count);
            backwards.reverse();
            parse_variants_json(&format!(
                r#"{{"default-priorities": {{"namespace": ["fixed"],
                      "property": {{"fixed": {{"arch": [{}]}}}}}},
                    "static-properties": {{"fixed": {{"arch": [{all}]}}}},
                    "variants": {{"first": {{"fixed": {{"arch": ["0_real"]}}}},
                                  "all": {{"fixed": {{"arch": [{all}]}}}}}}}}"#,
                backwards.join(",")
            ))
        };
        let at_cap = file(MAX_ENTRIES).unwrap();
        let result = order_variants(&at_cap, &x86(3));
        assert_eq!(result.labels(), ["all", "first"]);
        let best = &result.best().unwrap().matched[0];
        assert_eq!(best.value, format!("{}_real", MAX_ENTRIES - 1));
        assert_eq!(best.key.value, 0);

        let err = file(MAX_ENTRIES + 1).unwrap_err().to_string();
        assert!(
            err.contains(&format!(
                "holds {} entries, more than the {MAX_ENTRIES}",
                MAX_ENTRIES + 1
            )),
            "{err}"
        );
    }

    #[test]
    fn unknown_namespace_is_incompatible_unless_static() {
        let file = parse_variants_json(
            r#"{"default-priorities": {"namespace": ["fictional", "tier"]},
                "providers": {"fictional": {"plugin-api": "f:P"}, "tier": {"install-time": false}},
                "static-properties": {"tier": {"rank": ["gold", "silver"]}},
                "variants": {"a": {"fictional": {"hw": ["yes"]}},
                             "b": {"tier": {"rank": ["silver"]}},
                             "c": {"tier": {"rank": ["gold"]}},
                             "d": {"tier": {"rank": ["bronze"]}}}}"#,
        )
        .unwrap();
        let result = order_variants(&file, &x86(3));
        assert_eq!(result.labels(), ["c", "b"]);
        assert_eq!(
            result.rejection("a").unwrap().reason,
            "needs fictional::hw yes, the machine reports nothing for namespace `fictional`"
        );
        assert_eq!(
            result.rejection("d").unwrap().reason,
            "needs tier::rank bronze, the variants file allows only gold, silver"
        );
    }

    #[test]
    fn v0_0_2_property_and_feature_priorities_reorder() {
        // The file prefers v2 builds over v3 ones, whatever the provider's order.
        let file = parse_variants_json(
            r#"{"$schema": "https://variants-schema.wheelnext.dev/v0.0.2.json",
                "default-priorities": {"namespace": ["x86_64"],
                                       "property": {"x86_64": {"level": ["v2"]}}},
                "providers": {"x86_64": {"requires": ["provider-variant-x86-64"], "plugin-use": "all"}},
                "variants": {"v3": {"x86_64": {"level": ["v3"]}},
                             "v2": {"x86_64": {"level": ["v2"]}},
                             "null": {}}}"#,
        )
        .unwrap();
        assert_eq!(
            order_variants(&file, &x86(4)).labels(),
            ["v2", "v3", "null"]
        );
        // A preferred value the machine does not support still does not match.
        assert_eq!(order_variants(&file, &x86(1)).labels(), ["null"]);

        // Feature priorities: the file ranks `b` before the provider's first feature `a`.
        let file = parse_variants_json(
            r#"{"default-priorities": {"namespace": ["ns"], "feature": {"ns": ["b"]}},
                "variants": {"with_a": {"ns": {"a": ["1"]}}, "with_b": {"ns": {"b": ["1"]}}}}"#,
        )
        .unwrap();
        let mut supported = SupportedProperties::new();
        supported.push("ns", "a", vec!["1".into()], "test");
        supported.push("ns", "b", vec!["1".into()], "test");
        assert_eq!(
            order_variants(&file, &supported).labels(),
            ["with_b", "with_a"]
        );
        let file = VariantsFile {
            feature_priorities: std::collections::BTreeMap::new(),
            ..file
        };
        assert_eq!(
            order_variants(&file, &supported).labels(),
            ["with_a", "with_b"]
        );
    }

    #[test]
    fn describes_long_value_lists_briefly() {
        let values: Vec<String> = ["a", "b", "c", "d", "e"].map(String::from).to_vec();
        assert_eq!(need("n", "f", &values[..1]), "n::f a");
        assert_eq!(need("n", "f", &values[..2]), "n::f a or b");
        assert_eq!(need("n", "f", &values[..4]), "n::f a, b, c or d");
        assert_eq!(need("n", "f", &values), "n::f a, b, c or 2 more");
    }
}
