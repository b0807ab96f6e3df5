//! Integration tests of wheelgate-selectors: every fixture machine, bad input, overrides.
//! No test reads the host's hardware: each builds a `ProbeContext` on a tree under
//! `tests/machines/` or a temporary directory, with an explicit environment.

mod bad_input;
mod level_zero;
mod live;
mod machines;
mod overrides;
mod support;
