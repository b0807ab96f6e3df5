//! Integration tests of the wheelgate server, one module per area.

mod cli;
mod deploy;
mod explain;
mod fake_upstream;
mod faults_files;
mod faults_index;
mod faults_server;
mod files;
mod forwarded_refusals;
mod impossible_machines;
mod mirror_faults;
mod networks;
mod object_store;
mod object_store_pages;
mod ops;
mod per_core;
mod private_mirror;
mod private_upstream;
mod proxy_under_test;
mod rogue_upstream;
mod serve_start;
mod simple;
mod sources;
mod status_page;
mod tls_upstream;
mod variants;
