//! The package's exceptions, and the guard that turns a Rust panic into one of them instead of
//! pyo3's `PanicException` (a `BaseException`, which `except Exception` does not catch).

use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind};

use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;

create_exception!(
    wheelgate,
    WheelgateError,
    PyException,
    "Base class of every error wheelgate raises."
);
create_exception!(
    wheelgate,
    MachineError,
    WheelgateError,
    "A machine description (token, JSON, override, sysroot) that describes no machine."
);
create_exception!(
    wheelgate,
    RequirementError,
    WheelgateError,
    "A requirement that does not parse, names no PyTorch project, or matches no release."
);
create_exception!(
    wheelgate,
    PageError,
    WheelgateError,
    "A candidate list or index page that cannot be read."
);
create_exception!(
    wheelgate,
    InternalError,
    WheelgateError,
    "A bug in wheelgate (a Rust panic), caught before it could end the interpreter."
);

/// Adds the exception types to the module.
pub fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = module.py();
    module.add("WheelgateError", py.get_type::<WheelgateError>())?;
    module.add("MachineError", py.get_type::<MachineError>())?;
    module.add("RequirementError", py.get_type::<RequirementError>())?;
    module.add("PageError", py.get_type::<PageError>())?;
    module.add("InternalError", py.get_type::<InternalError>())?;
    Ok(())
}

/// An error and every cause under it on one line, as the `wheelgate` command prints it
/// (anyhow's `{:#}`): what failed, then why.
pub fn message(error: &dyn std::error::Error) -> String {
    let causes = wheelgate_index::error_chain::source_chain(error);
    if causes.is_empty() {
        error.to_string()
    } else {
        format!("{error}: {causes}")
    }
}

/// Runs `body`, turning a panic in it into [`InternalError`].
pub fn guard<T>(body: impl FnOnce() -> PyResult<T>) -> PyResult<T> {
    catch_unwind(AssertUnwindSafe(body)).unwrap_or_else(|payload| {
        Err(InternalError::new_err(format!(
            "internal error in wheelgate (please report it): {}",
            panic_text(payload.as_ref())
        )))
    })
}

fn panic_text(payload: &(dyn Any + Send)) -> &str {
    payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("a panic without a message")
}

/// Panics with `message` inside [`guard`]: lets the test suite prove that a panic reaches Python
/// as [`InternalError`] and the interpreter lives on. Not part of the public API.
#[pyfunction]
#[pyo3(name = "_test_panic")]
pub fn test_panic(message: &str) -> PyResult<()> {
    guard(|| panic!("{message}"))
}
