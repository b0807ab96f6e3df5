//! Integration tests of the wheelgate server, one module per area.

mod cli;
mod deploy;
mod explain;
mod fake_upstream;
mod files;
mod object_store;
mod ops;
mod serve_start;
mod simple;
mod status_page;
