//! End-to-end tests for wheelgate.
