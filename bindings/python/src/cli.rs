//! The `wheelgate` command of the Python package: the Rust binary's own code
//! (`wheelgate::cli::main`), so every subcommand prints what the binary prints.

use pyo3::prelude::*;

use crate::errors::guard;

/// Runs the command line with `argv` (the program name first) and returns its exit code. The
/// interpreter lock is released: `wheelgate serve` runs until interrupted.
#[pyfunction]
pub fn run_cli(py: Python<'_>, argv: Vec<String>) -> PyResult<u8> {
    py.detach(|| guard(|| Ok(wheelgate::cli::main(argv))))
}
