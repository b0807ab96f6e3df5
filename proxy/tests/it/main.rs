//! Integration tests of the wheelgate server, one module per area.

mod cli;
mod deploy;
mod fake_upstream;
mod faults_index;
mod files;
mod object_store;
mod ops;
mod proxy_under_test;
mod rogue_upstream;
mod simple;
mod status_page;
