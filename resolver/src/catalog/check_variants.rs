//! `wheelgate catalog check` on a wheel-variant index: a release's `*-variants.json` says, per
//! variant, what its wheels were built for (`nvidia :: sm_arch`, `amd :: gfx_arch`); each
//! disagreement with the catalog's compiled sets is a finding (PyTorch's 2.10 file lists
//! gfx1151 for rocm7.0 and rocm7.1, for instance).

use std::collections::BTreeSet;

use super::check::{Finding, FindingKind};
use super::{Catalog, Requirement};
use crate::backend::Backend;
use crate::machine::Platform;
use crate::variants::schema::VariantsFile;

impl Catalog {
    /// The disagreements between `file`, the variants file of torch `version` (`2.10.0`), and
    /// the catalog's compiled sets on Linux x86_64 (the platform a variants file describes).
    pub fn check_variants(&self, version: &str, file: &VariantsFile) -> Vec<Finding> {
        let Some(line) = super::check::release_line(version) else {
            return Vec::new();
        };
        let Some(release) = self.releases.iter().find(|r| r.torch == line) else {
            return Vec::new();
        };
        let platform: Platform = "linux-x86_64".parse().expect("a known platform");
        let mut findings = Vec::new();
        for (label, properties) in &file.variants {
            let Some(backend) = backend_of_label(label) else {
                continue;
            };
            let rules = self.backend_rules(release, &backend, platform);
            let (listed, described, what): (BTreeSet<String>, BTreeSet<String>, &str) =
                match &rules.requirement {
                    Requirement::Cuda { sm, .. } => (
                        properties
                            .get("nvidia")
                            .and_then(|n| n.get("sm_arch"))
                            .into_iter()
                            .flatten()
                            .filter_map(|value| capability_of_sm_arch(value))
                            .collect(),
                        sm.iter().map(ToString::to_string).collect(),
                        "compute capabilities",
                    ),
                    Requirement::Rocm { gfx } => (
                        properties
                            .get("amd")
                            .and_then(|a| a.get("gfx_arch"))
                            .into_iter()
                            .flatten()
                            .cloned()
                            .collect(),
                        gfx.iter().map(ToString::to_string).collect(),
                        "gfx targets",
                    ),
                    Requirement::Nothing | Requirement::Xpu { .. } => continue,
                };
            if listed.is_empty() || listed == described {
                continue;
            }
            let only_listed: Vec<&String> = listed.difference(&described).collect();
            let only_described: Vec<&String> = described.difference(&listed).collect();
            let mut parts = Vec::new();
            if !only_listed.is_empty() {
                parts.push(format!(
                    "the variants file lists {} the catalog lacks",
                    join(&only_listed)
                ));
            }
            if !only_described.is_empty() {
                parts.push(format!(
                    "the catalog has {} the file does not list",
                    join(&only_described)
                ));
            }
            findings.push(Finding {
                kind: FindingKind::VariantsDisagree,
                release: Some(line.to_string()),
                message: format!(
                    "torch {line}: {backend} (variant `{label}`) {what}: {}",
                    parts.join("; ")
                ),
            });
        }
        findings
    }
}

fn join(values: &[&String]) -> String {
    values
        .iter()
        .map(|v| v.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The backend a variant label names: `cuda12.8` is `cu128`, `rocm7.1` and `xpu` themselves.
fn backend_of_label(label: &str) -> Option<Backend> {
    if let Some(version) = label.strip_prefix("cuda") {
        let (major, minor) = version.split_once('.')?;
        return format!("cu{major}{minor}").parse().ok();
    }
    label.parse().ok()
}

/// The compute capability of a real `sm_arch` value (`86_real` is 8.6, `100_real` 10.0); a
/// `_virtual` one (PTX) is not compiled code and is left out.
fn capability_of_sm_arch(value: &str) -> Option<String> {
    let digits = value.strip_suffix("_real")?;
    if digits.len() < 2 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let (major, minor) = digits.split_at(digits.len() - 1);
    Some(format!("{major}.{minor}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::variants::schema::parse_variants_json;

    #[test]
    fn labels_and_sm_arch_values_read() {
        assert_eq!(backend_of_label("cuda12.8").unwrap().to_string(), "cu128");
        assert_eq!(backend_of_label("rocm7.1").unwrap().to_string(), "rocm7.1");
        assert!(backend_of_label("null").is_none());
        assert_eq!(capability_of_sm_arch("86_real").as_deref(), Some("8.6"));
        assert_eq!(capability_of_sm_arch("100_real").as_deref(), Some("10.0"));
        assert_eq!(capability_of_sm_arch("120_virtual"), None);
    }

    #[test]
    fn a_gfx_target_the_catalog_lacks_is_found() {
        let file = parse_variants_json(
            r#"{"default-priorities": {"namespace": ["amd"]}, "providers": {"amd": {"requires": ["amd-variant-provider>=0.0.2,<1.0.0"], "plugin-api": "amd_variant_provider.plugin:AMDVariantPlugin"}}, "variants": {"null": {}, "rocm7.1": {"amd": {"gfx_arch": ["gfx906", "gfx908", "gfx90a", "gfx942", "gfx950", "gfx1030", "gfx1100", "gfx1101", "gfx1102", "gfx1150", "gfx1151", "gfx1152", "gfx1200", "gfx1201"]}}}}"#,
        )
        .unwrap();
        let findings = Catalog::embedded().check_variants("2.10.0", &file);
        assert_eq!(findings.len(), 1, "{findings:#?}");
        assert!(
            findings[0].message.ends_with("rocm7.1 (variant `rocm7.1`) gfx targets: the variants file lists gfx1152 the catalog lacks; the catalog has gfx900 the file does not list"),
            "{}",
            findings[0].message
        );
    }
}
