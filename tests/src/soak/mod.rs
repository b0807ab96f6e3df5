//! The soak benchmark (`scripts/soak`): the release `wheelgate serve` as its own process, in
//! front of an upstream that takes turns being healthy, stalling, resetting, answering 503 and
//! sending bad pages, while pip-like clients ask for pages, metadata, cached and cold files and
//! ranges (every body checked against its sha256) and a slowloris holds 1,000 connections. It
//! prints what the clients saw and what the server cost (RSS, descriptors).

pub mod clients;
pub mod corpus;
pub mod faulty;
pub mod report;
pub mod slowloris;
