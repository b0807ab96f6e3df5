//! Variant labels: the optional last component of a variant wheel's filename
//! (`torch-2.9.0-cp313-cp313-manylinux_2_28_x86_64-cuda12.8.whl` has label `cuda12.8`).
//!
//! Splitting a filename into its components is `crate::filename`'s job; this module only says
//! whether a string is a valid label. See PEP 825, "Variant label".

use super::error::{VariantsError, shorten};

/// The label PEP 825 reserves for the variant with no properties (PyTorch's CPU build).
/// PyTorch 2.8 used `00000000` instead; a null variant is recognised by its empty property
/// set, not by its label (see [`super::schema::VariantsFile::is_null_variant`]).
pub const NULL_LABEL: &str = "null";

/// The longest label this project emits. PEP 825 dropped the old 16-character limit of the
/// PEP 817 drafts, but existing tools still reject longer labels, so we accept any length and
/// emit at most this many.
pub const MAX_EMITTED_LABEL_LEN: usize = 16;

/// Whether `label` matches PEP 825's `^[0-9a-z_.]+$`, of any length: the check a wheel
/// filename's label gets where the name is split.
pub fn is_valid_label(label: &str) -> bool {
    crate::filename::is_valid_variant_label(label)
}

/// [`is_valid_label`] as a `Result`, for callers that propagate errors.
pub fn check_label(label: &str) -> Result<(), VariantsError> {
    if is_valid_label(label) {
        Ok(())
    } else {
        Err(VariantsError::InvalidLabel {
            label: shorten(label),
        })
    }
}

/// Whether `label` is valid and short enough ([`MAX_EMITTED_LABEL_LEN`]) for this project to
/// put it in a filename it serves, so that tools still enforcing the old limit accept it.
pub fn is_emittable_label(label: &str) -> bool {
    is_valid_label(label) && label.len() <= MAX_EMITTED_LABEL_LEN
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_real_labels_of_any_length() {
        for label in [
            "cuda12.8",
            "cuda13.0",
            "rocm6.4",
            "xpu",
            "null",
            "00000000",
            "cu126",
            "x86_64_v3",
            "a_label_much_longer_than_sixteen_characters",
        ] {
            assert!(is_valid_label(label), "{label}");
            assert!(check_label(label).is_ok(), "{label}");
        }
    }

    #[test]
    fn rejects_invalid_labels() {
        for label in [
            "",
            "CUDA12",
            "cuda-12",
            "cu 126",
            "whoopsie-whoops",
            "é",
            "cuda12.8/",
        ] {
            assert!(!is_valid_label(label), "{label}");
        }
        let message = check_label("Cuda").unwrap_err().to_string();
        assert!(message.contains("`Cuda`"), "{message}");
    }

    #[test]
    fn emits_at_most_sixteen_characters() {
        assert!(is_emittable_label("cuda12.8"));
        assert!(is_emittable_label("abcdefghijklmnop"));
        assert!(!is_emittable_label("abcdefghijklmnopq"));
        assert!(!is_emittable_label("Upper"));
    }
}
