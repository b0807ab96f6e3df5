//! `wheelgate.select()`: which build each requirement resolves to, and why every other build
//! was not chosen; the answers of `wheelgate select` (the same function computes both).

use pyo3::prelude::*;
use wheelgate::cli::select::{Answer, SelectCommandError, answers};
use wheelgate_resolver::Policy;
use wheelgate_selectors::overrides::{Env, backend_override};

use crate::errors::{MachineError, PageError, RequirementError, guard, message};
use crate::machine::{PyMachine, detect_machine};

/// One requirement's answer.
#[pyclass(name = "Choice", module = "wheelgate", frozen, get_all)]
#[derive(Debug, Clone)]
pub struct PyChoice {
    /// The normalized project name.
    project: String,
    /// The version answered for: the pinned one, else the newest release line allowed.
    version: String,
    /// The chosen backend (`cu130`, `rocm6.4`, `cpu`); `None` when no build runs here.
    backend: Option<String>,
    /// The index URL that serves that build; `None` when no build runs here.
    index_url: Option<String>,
    /// Every other backend and why it was not chosen, as `(backend, reason)` pairs.
    reasons: Vec<(String, String)>,
    /// What the user should know (inferred rules, a pinned backend, an unused GPU).
    notes: Vec<String>,
    /// With `index`: the files of the version the proxy would serve this machine.
    files: Vec<String>,
}

#[pymethods]
impl PyChoice {
    fn __repr__(&self) -> String {
        format!(
            "<wheelgate.Choice {} {}: {}>",
            self.project,
            self.version,
            self.backend.as_deref().unwrap_or("no build")
        )
    }
}

impl From<Answer> for PyChoice {
    fn from(answer: Answer) -> Self {
        PyChoice {
            project: answer.project,
            version: answer.version,
            backend: answer.backend,
            index_url: answer.index_url,
            reasons: answer
                .reasons
                .into_iter()
                .map(|r| (r.backend, r.reason))
                .collect(),
            notes: answer.notes,
            files: answer.files,
        }
    }
}

/// The requirements' answers for `machine` (this machine, probed, when `None`), from the
/// catalog; with `index` (an index URL or a saved page) from that real page, as the proxy
/// selects. `requirements` is one requirement or a list of them.
#[pyfunction]
#[pyo3(signature = (requirements, machine = None, index = None))]
pub fn select(
    py: Python<'_>,
    requirements: Requirements,
    machine: Option<PyRef<'_, PyMachine>>,
    index: Option<&str>,
) -> PyResult<Vec<PyChoice>> {
    let Requirements(requirements) = requirements;
    let machine = machine.map(|m| m.machine.clone());
    py.detach(|| {
        guard(|| {
            let machine = match machine {
                Some(machine) => machine,
                None => detect_machine(None)?,
            };
            let policy = policy_from_env()?;
            answers(&machine, &policy, &requirements, index)
                .map(|answers| answers.into_iter().map(PyChoice::from).collect())
                .map_err(|error| to_python(&error))
        })
    })
}

/// One requirement (`str`) or a sequence of them; a `str` is not read as its characters.
pub struct Requirements(Vec<String>);

impl<'py> FromPyObject<'_, 'py> for Requirements {
    type Error = PyErr;

    fn extract(object: Borrowed<'_, 'py, PyAny>) -> PyResult<Self> {
        if let Ok(one) = object.extract::<String>() {
            return Ok(Requirements(vec![one]));
        }
        object
            .extract::<Vec<String>>()
            .map(Requirements)
            .map_err(|_| {
                pyo3::exceptions::PyTypeError::new_err(format!(
                    "requirements must be a str or a list of str, not `{}`",
                    object
                        .get_type()
                        .name()
                        .map_or_else(|_| "?".to_string(), |n| n.to_string())
                ))
            })
    }
}

/// The backend pinned by `WHEELGATE_BACKEND`, as the command line reads it.
pub(crate) fn policy_from_env() -> PyResult<Policy> {
    let pinned = backend_override(&Env::from_process()).map_err(|error| {
        MachineError::new_err(format!(
            "invalid override; unset it or fix its value: {}",
            message(&error)
        ))
    })?;
    Ok(Policy {
        pinned,
        prefer: Vec::new(),
    })
}

fn to_python(error: &SelectCommandError) -> PyErr {
    let text = message(error);
    match error {
        SelectCommandError::Override(_)
        | SelectCommandError::Detect(_)
        | SelectCommandError::Machine(_) => MachineError::new_err(text),
        // The Python API passes no configuration file, but the errors of reading one, of its
        // catalog overlay and of its upstream access are about reading the index too.
        SelectCommandError::Index(_)
        | SelectCommandError::Config(_)
        | SelectCommandError::Access(_)
        | SelectCommandError::Catalog(_)
        | SelectCommandError::Output(_)
        | SelectCommandError::Json(_) => PageError::new_err(text),
        SelectCommandError::Requirement { .. }
        | SelectCommandError::NotPytorch(_)
        | SelectCommandError::NoRelease(_)
        | SelectCommandError::NotOnPage { .. } => RequirementError::new_err(text),
    }
}
