//! Variants whose properties contradict each other, so that no machine could ever satisfy them
//! (or their label says the opposite of their properties). A `variants.json` is data from the
//! network: such a variant is skipped with the reason, and the version's other variants are
//! chosen as usual.
//!
//! Two contradictions are known:
//!
//! - a CUDA window that is empty: `nvidia :: cuda_version_lower_bound` says "this CUDA or
//!   newer" and `cuda_version_upper_bound` "older than this" (features AND, values OR), so a
//!   variant whose smallest lower bound is not below its largest upper bound needs a CUDA that
//!   does not exist (`{"cuda_version_lower_bound": ["13.0"], "cuda_version_upper_bound": ["12.0"]}`);
//! - a `null` label with properties: PEP 825 reserves `null` for the variant with none.

use crate::version::DottedVersion;

use super::NULL_LABEL;
use super::properties::NVIDIA;
use super::schema::{Properties, VariantsFile};

/// The labels of `file` whose properties contradict each other, with why, in label order.
pub fn contradictions(file: &VariantsFile) -> Vec<(String, String)> {
    file.variants
        .iter()
        .filter_map(|(label, properties)| {
            contradiction(label, properties).map(|why| (label.clone(), why))
        })
        .collect()
}

fn contradiction(label: &str, properties: &Properties) -> Option<String> {
    if label == NULL_LABEL && properties.values().any(|features| !features.is_empty()) {
        let listed: Vec<String> = properties
            .iter()
            .flat_map(|(namespace, features)| {
                features
                    .keys()
                    .map(move |feature| format!("`{namespace} :: {feature}`"))
            })
            .collect();
        return Some(format!(
            "`null` is reserved for the variant with no properties, but this one lists {}",
            listed.join(", ")
        ));
    }
    let nvidia = properties.get(NVIDIA)?;
    let bound = |feature: &str, pick: fn(DottedVersion, DottedVersion) -> DottedVersion| {
        nvidia
            .get(feature)?
            .iter()
            .filter_map(|value| value.parse::<DottedVersion>().ok())
            .reduce(pick)
    };
    let lowest_lower = bound("cuda_version_lower_bound", std::cmp::min)?;
    let highest_upper = bound("cuda_version_upper_bound", std::cmp::max)?;
    (lowest_lower >= highest_upper).then(|| {
        format!(
            "it needs CUDA `{lowest_lower}` or newer and older than `{highest_upper}`, which no CUDA is"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::variants::parse_variants_json;

    #[test]
    fn an_empty_cuda_window_and_a_null_with_properties_contradict() {
        let file = parse_variants_json(
            r#"{"$schema": "https://variants-schema.wheelnext.dev/v0.0.3.json",
            "default-priorities": {"namespace": ["nvidia"]},
            "variants": {
              "null": {"nvidia": {"sm_arch": ["90_real"]}},
              "cuda13.0": {"nvidia": {"cuda_version_lower_bound": ["13.0"], "cuda_version_upper_bound": ["12.0", "13.0"]}},
              "cuda12.8": {"nvidia": {"cuda_version_lower_bound": ["12.0"], "cuda_version_upper_bound": ["13.0"]}},
              "cuda12.6": {"nvidia": {"cuda_version_lower_bound": ["12.0"], "sm_arch": ["60_real"]}}}}"#,
        )
        .unwrap();
        let found = contradictions(&file);
        let labels: Vec<&str> = found.iter().map(|(l, _)| l.as_str()).collect();
        assert_eq!(labels, ["cuda13.0", "null"]);
        assert!(
            found[0].1.contains("`13.0` or newer and older than `13.0`"),
            "{found:?}"
        );
        assert!(found[1].1.contains("`nvidia :: sm_arch`"), "{found:?}");
    }

    #[test]
    fn real_files_have_none() {
        for name in [
            "torch-2.8.0-variants.json",
            "torch-2.9.0-variants.json",
            "torch-2.10.0-variants.json",
            "torchvision-0.24.0-variants.json",
            "torchvision-0.25.0-variants.json",
        ] {
            let Some(text) = crate::variants::fixture(name) else {
                return;
            };
            let file = parse_variants_json(&text).unwrap();
            assert_eq!(contradictions(&file), [], "{name}");
        }
    }
}
