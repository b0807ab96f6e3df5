//! Wheel variants (PEP 817 "Wheel Variants: Beyond Platform Tags", PEP 825 "Wheel Variants:
//! Package Format"): variant labels, the `{name}-{version}-variants.json` and
//! `*.dist-info/variant.json` metadata in every generation PyTorch published, the properties a
//! machine supports as the WheelNext reference providers would report them, and PEP 825's
//! ordering of the variants for a machine, with a reason for every rejected one.
//!
//! Pure and synchronous, like the rest of the crate:
//!
//! ```text
//! parse_variants_json(text) ─┐
//!                            ├─> order_variants(file, supported) -> VariantOrder
//! SupportedProperties::from_machine(machine) ─┘      (best label first, null last, reasons)
//!
//! choose_variants(page files, variants files, machine) -> VariantChoice
//!     (one variant per plain wheel filename, for serving plain installers)
//! ```

pub mod choose;
mod consistency;
mod contradictions;
mod error;
pub mod label;
pub mod markers;
pub mod ordering;
pub mod properties;
pub mod schema;

pub use choose::{
    VariantChoice, VariantPick, VersionVariants, choose_variants, labelled_filename,
    lists_variants, plain_filename, variants_json_indices,
};
pub use error::{UNKNOWN_FORMAT, VariantsError};
pub use label::{
    MAX_EMITTED_LABEL_LEN, NULL_LABEL, check_label, is_emittable_label, is_valid_label,
};
pub use markers::decide_variant_label;
pub use ordering::{
    MatchedProperty, PropertyKey, RankedVariant, RejectedVariant, VariantOrder, order_variants,
    order_variants_for_machine,
};
pub use properties::{SupportedFeature, SupportedProperties};
pub use schema::{
    Properties, Provider, RankedFeature, SchemaGeneration, VariantsFile, parse_variant_json,
    parse_variants_json,
};

/// Reads a file of `../shared/fixtures/variants-json/`, or `None` (after saying so) when the
/// shared fixtures are not checked out next to the workspace.
#[cfg(test)]
pub(crate) fn fixture(name: &str) -> Option<String> {
    let path = format!(
        "{}{name}",
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../shared/fixtures/variants-json/"
        )
    );
    if let Ok(text) = std::fs::read_to_string(&path) {
        Some(text)
    } else {
        println!("fixture {path} is absent: this test was not run");
        None
    }
}
