//! Selection: for each package version, the one build that runs best on a machine, with a
//! reason for every rejected build. The rules are DESIGN.md's "Selection rules".

pub mod bind;
mod check;
mod decide;
mod group;
mod page;
pub mod plain_aliases;
mod reason;
mod release;
mod signals;
mod text_hash;
pub mod torch_pin;

pub use check::minor_version_compatibility;
pub use decide::{Considered, Decision, Offer, Policy, catalog_offers, class_order, decide};
pub use group::{FileGroups, name_hash};
pub use page::{
    Disagreement, Dropped, FileRef, PageSelection, PlatformChoice, VersionSelection,
    select_grouped, select_grouped_kept, select_page,
};
pub use reason::{OutrankedBecause, Rejection};
pub use release::{ReleaseSelection, select_release};
pub use torch_pin::TorchPin;
