//! Integration tests of wheelgate-resolver, one module per area.

mod garbage;
mod page;
mod scenarios;
