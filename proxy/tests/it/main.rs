//! Integration tests of the wheelgate server, one module per area.

mod files;
mod simple;
mod object_store;
mod ops;
mod simple;
mod status_page;
