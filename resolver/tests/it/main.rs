//! Integration tests of wheelgate-resolver, one module per area.

mod page;
mod scenarios;
