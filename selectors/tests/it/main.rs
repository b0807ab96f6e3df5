//! Integration tests of wheelgate-selectors.
