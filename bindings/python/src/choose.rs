//! `wheelgate.choose()`: an installer's own candidate files for one project (filenames, or PEP
//! 691 `files` entries) reduced to what the proxy would serve this machine, by the proxy's own
//! code path (`wheelgate_server::rewrite::select_files`, which calls
//! `wheelgate_resolver::select_page`), with an explanation for every version.

use std::collections::BTreeMap;

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};
use wheelgate_resolver::Catalog;
use wheelgate_resolver::index::{IndexFile, ProjectPage};
use wheelgate_resolver::select::{PageSelection, VersionSelection};
use wheelgate_server::rewrite::select_files;

use crate::bind;
use crate::errors::{PageError, guard};
use crate::machine::{PyMachine, detect_machine};
use crate::select::policy_from_env;

/// What `choose` kept, and why.
#[pyclass(name = "Chosen", module = "wheelgate", frozen, get_all)]
pub struct PyChosen {
    /// The normalized project name.
    project: String,
    /// The kept entries, exactly the objects given, in the order given.
    files: Vec<Py<PyAny>>,
    /// Every version, newest first: its chosen build and why every other was not chosen.
    versions: Vec<PyVersionChoice>,
    /// Every file left off, as `(filename, reason)` pairs in the order given.
    dropped: Vec<(String, String)>,
}

/// One version's choice.
#[pyclass(name = "VersionChoice", module = "wheelgate", frozen, get_all)]
#[derive(Debug, Clone)]
pub struct PyVersionChoice {
    /// The public version (`2.9.0`, no local label).
    version: String,
    /// The backend kept; `None` when no build runs here, or when the files name no backend.
    backend: Option<String>,
    /// The filenames kept for this version.
    kept: Vec<String>,
    /// Every backend offered, the chosen one first.
    builds: Vec<PyBuild>,
    /// What the user should know: inferred rules, a GPU no build can use, a pin.
    notes: Vec<String>,
    /// The backend kept on each other platform the version's wheels are built for
    /// (`linux-aarch64`, `windows-x86_64`, ...), for the same accelerators there; `None` where
    /// none runs. `backend` is the machine's own platform's.
    platforms: BTreeMap<String, Option<String>>,
}

/// What happened to one backend of a version.
#[pyclass(name = "Build", module = "wheelgate", frozen, get_all)]
#[derive(Debug, Clone)]
pub struct PyBuild {
    /// The backend (`cu130`, `cpu`, ...).
    backend: String,
    /// `chosen`, `usable` (runs here, lost on preference) or `rejected` (does not run here).
    verdict: &'static str,
    /// Why it was not chosen; `None` for the chosen build.
    reason: Option<String>,
}

#[pymethods]
impl PyChosen {
    fn __repr__(&self) -> String {
        format!(
            "<wheelgate.Chosen {}: {} files kept over {} versions>",
            self.project,
            self.files.len(),
            self.versions.len()
        )
    }
}

#[pymethods]
impl PyVersionChoice {
    fn __repr__(&self) -> String {
        format!(
            "<wheelgate.VersionChoice {}: {}>",
            self.version,
            self.backend.as_deref().unwrap_or("no backend")
        )
    }
}

#[pymethods]
impl PyBuild {
    fn __repr__(&self) -> String {
        format!("<wheelgate.Build {} {}>", self.backend, self.verdict)
    }
}

/// Keeps, of `files` (filenames, or dicts shaped like PEP 691 `files` entries with at least
/// `filename` and `url`), the ones the proxy would serve `machine` (this machine, probed, when
/// `None`) for `project`.
///
/// A project built against torch outside its release train (xformers, fbgemm-gpu, ...) is
/// bound as the proxy binds it when `torch` (torch's candidate files, in the same forms) is
/// given: each build is kept only where the torch release its metadata pins gets that build on
/// the machine. Its metadata comes from `metadata`: a mapping, or a callable, from a filename
/// to its core metadata (`str` or `bytes`: the PEP 658 file, or the wheel's `METADATA`); only
/// one file per build is asked for.
#[pyfunction]
#[pyo3(signature = (project, files, machine = None, *, torch = None, metadata = None))]
#[allow(clippy::needless_pass_by_value)] // pyo3 hands sequences over as owned vectors
pub fn choose(
    py: Python<'_>,
    project: &str,
    files: Vec<Bound<'_, PyAny>>,
    machine: Option<PyRef<'_, PyMachine>>,
    torch: Option<Vec<Bound<'_, PyAny>>>,
    metadata: Option<Bound<'_, PyAny>>,
) -> PyResult<PyChosen> {
    let page = guard(|| read_entries(project, &files))?;
    let torch_page = match &torch {
        Some(torch) => Some(guard(|| read_entries("torch", torch))?),
        None => None,
    };
    if torch_page.is_some() && metadata.is_none() {
        return Err(PyTypeError::new_err(
            "`torch` was given without `metadata`: binding reads each build's torch pin from its core metadata; give `metadata` (a mapping or callable from a filename to its METADATA)",
        ));
    }
    let project = project.to_string();
    let machine = machine.map(|m| m.machine.clone());
    let (mut selection, machine, policy, project) = py.detach(|| {
        guard(|| {
            let machine = match machine {
                Some(machine) => machine,
                None => detect_machine(None)?,
            };
            let policy = policy_from_env()?;
            let selection = select_files(Catalog::embedded(), &machine, &policy, &project, &page);
            Ok((selection, machine, policy, project))
        })
    })?;
    if let (Some(torch_page), Some(metadata)) = (&torch_page, &metadata) {
        let context = bind::Context {
            machine: &machine,
            policy: &policy,
            project: &project,
            page: &page,
        };
        bind::bind(&context, torch_page, metadata, &mut selection)?;
    }
    Ok(chosen(project, &page, &selection, &files))
}

/// The entries as a project page: a filename's link is the filename itself (no directory, so
/// only its label names its backend); a dict's link is its `url`.
pub fn read_entries(project: &str, files: &[Bound<'_, PyAny>]) -> PyResult<ProjectPage> {
    let mut page = ProjectPage {
        name: project.to_string(),
        files: Vec::with_capacity(files.len()),
        versions: Vec::new(),
        meta: wheelgate_resolver::index::Meta::default(),
        base: None,
        status: None,
        dropped: Vec::new(),
    };
    for (position, entry) in files.iter().enumerate() {
        let file = if let Ok(name) = entry.cast::<PyString>() {
            let name = name.to_cow()?;
            IndexFile::new(name.as_ref(), name.as_ref())
        } else if let Ok(dict) = entry.cast::<PyDict>() {
            IndexFile::new(
                dict_text(dict, position, "filename")?,
                dict_text(dict, position, "url")?,
            )
        } else {
            return Err(PyTypeError::new_err(format!(
                "file {position} is a `{}`; give a filename (str) or a PEP 691 file dict",
                entry.get_type().name()?
            )));
        };
        page.files.push(file);
    }
    Ok(page)
}

/// A string value of a PEP 691 file dict.
fn dict_text(dict: &Bound<'_, PyDict>, position: usize, key: &str) -> PyResult<String> {
    let Some(value) = dict.get_item(key)? else {
        return Err(PageError::new_err(format!(
            "file {position} has no `{key}`; a PEP 691 file entry has `filename` and `url`"
        )));
    };
    value
        .extract::<String>()
        .map_err(|_| PyTypeError::new_err(format!("file {position}'s `{key}` is not a str")))
}

fn chosen(
    project: String,
    page: &ProjectPage,
    selection: &PageSelection,
    given: &[Bound<'_, PyAny>],
) -> PyChosen {
    let files = given
        .iter()
        .enumerate()
        .filter(|(index, _)| selection.keeps(*index))
        .map(|(_, entry)| entry.clone().unbind())
        .collect();
    PyChosen {
        project: if selection.project.is_empty() {
            project
        } else {
            selection.project.clone()
        },
        files,
        versions: selection
            .versions
            .iter()
            .map(|version| version_choice(version, page))
            .collect(),
        dropped: selection
            .dropped
            .iter()
            .map(|(index, why)| (page.files[*index].filename.clone(), why.to_string()))
            .collect(),
    }
}

fn version_choice(version: &VersionSelection, page: &ProjectPage) -> PyVersionChoice {
    let kept = version
        .kept
        .iter()
        .map(|&i| page.files[i].filename.clone())
        .collect();
    let Some(decision) = &version.decision else {
        return PyVersionChoice {
            version: version.version.to_string(),
            backend: None,
            kept,
            builds: Vec::new(),
            notes: vec!["its files name no backend: every file is kept".to_string()],
            platforms: BTreeMap::new(),
        };
    };
    PyVersionChoice {
        version: version.version.to_string(),
        backend: decision.chosen.as_ref().map(ToString::to_string),
        kept,
        builds: decision
            .considered
            .iter()
            .map(|considered| PyBuild {
                backend: considered.backend.to_string(),
                verdict: considered.verdict(),
                reason: considered.rejection.as_ref().map(ToString::to_string),
            })
            .collect(),
        notes: decision.notes.clone(),
        platforms: version
            .platforms
            .iter()
            .map(|choice| {
                (
                    choice.platform.to_string(),
                    choice.decision.chosen.as_ref().map(ToString::to_string),
                )
            })
            .collect(),
    }
}
