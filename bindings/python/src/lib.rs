//! `wheelgate._wheelgate`, the extension module behind the Python package `wheelgate`: the
//! machine ([`machine`]), the catalog's answer per requirement ([`select`]), the choice among an
//! installer's own files ([`choose`], the proxy's code path), and the `wheelgate` command
//! ([`cli`], the Rust binary's code). [`errors`] turns every failure, panics included, into a
//! Python exception.
//!
//! Built by maturin (`pyproject.toml` beside this crate) as an abi3 module for `CPython` >= 3.9.

pub mod bind;
pub mod choose;
pub mod cli;
pub mod errors;
pub mod machine;
pub mod select;

use pyo3::prelude::*;

/// The module `wheelgate._wheelgate`; `wheelgate/__init__.py` re-exports it.
#[pymodule]
fn _wheelgate(module: &Bound<'_, PyModule>) -> PyResult<()> {
    errors::register(module)?;
    module.add_class::<machine::PyMachine>()?;
    module.add_class::<machine::PyGpu>()?;
    module.add_function(wrap_pyfunction!(machine::detect, module)?)?;
    module.add_class::<select::PyChoice>()?;
    module.add_function(wrap_pyfunction!(select::select, module)?)?;
    module.add_class::<choose::PyChosen>()?;
    module.add_class::<choose::PyVersionChoice>()?;
    module.add_class::<choose::PyBuild>()?;
    module.add_function(wrap_pyfunction!(choose::choose, module)?)?;
    module.add_function(wrap_pyfunction!(cli::run_cli, module)?)?;
    module.add_function(wrap_pyfunction!(errors::test_panic, module)?)?;
    Ok(())
}
