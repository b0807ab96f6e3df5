//! Integration tests of wheelgate-resolver, one module per area.

mod arriving_html;
mod bad_input;
mod garbage;
mod grouped;
mod invariant;
mod linked;
mod page;
mod platforms;
mod registry_pages;
mod scenarios;
mod variant_bad_input;
mod variant_consistency;
mod variant_overrides;
