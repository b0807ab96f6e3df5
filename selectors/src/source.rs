//! Provenance: how each fact was found, and what was tried before it and why that failed.
//!
//! A probe opens a [`Trail`] for a fact, records every source that did not answer with the
//! reason, and closes it with the value and the source that gave it (or with nothing).

use std::fmt;

use serde::Serialize;
use tracing::debug;

/// Where a fact came from, or where a probe looked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// An environment variable (an override).
    Override(&'static str),
    /// A file under the sysroot, by its machine path (`/sys/module/nvidia/version`).
    File(String),
    /// A table in this crate, looked up with a key read from a file
    /// (`NVIDIA model-name table` for `Tesla T4` from `/proc/driver/nvidia/gpus/.../information`).
    Table {
        /// The table's name (`NVIDIA model-name table`).
        table: &'static str,
        /// The key looked up (`Tesla T4`).
        key: String,
        /// Where the key was read (a file's machine path).
        from: String,
    },
    /// A library loaded at run time (`NVML`, `libcuda`, `glibc`).
    Library(&'static str),
    /// A command run as a subprocess (`nvidia-smi`).
    Command(&'static str),
    /// The CPU itself (CPUID).
    Cpuid,
    /// The target this program was built for.
    Build,
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Override(var) => write!(f, "env {var}"),
            Source::File(path) => f.write_str(path),
            Source::Table { table, key, from } => write!(f, "{table} [{key}] via {from}"),
            Source::Library(name) => write!(f, "{name} (library)"),
            Source::Command(name) => write!(f, "{name} (command)"),
            Source::Cpuid => f.write_str("CPUID"),
            Source::Build => f.write_str("build target"),
        }
    }
}

impl Serialize for Source {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// A source that did not answer, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Attempt {
    /// The source that was tried.
    pub source: Source,
    /// Why it gave no answer.
    pub reason: String,
}

/// One fact of the description with its provenance.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Fact {
    /// Dotted name of the fact (`nvidia.driver_version`, `nvidia.gpu0`, `platform`).
    pub name: String,
    /// The value as shown to people; `None` when no source answered.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// The source that gave the value.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<Source>,
    /// Sources tried before, in order, with the reason each did not answer.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tried: Vec<Attempt>,
}

/// The facts of one fact name being gathered.
#[derive(Debug)]
pub struct Trail {
    name: String,
    tried: Vec<Attempt>,
}

impl Trail {
    /// Starts gathering `name`.
    pub fn new(name: impl Into<String>) -> Self {
        Trail {
            name: name.into(),
            tried: Vec::new(),
        }
    }

    /// Records a source that did not answer; logged at debug level, since most machines lack
    /// most sources.
    pub fn failed(&mut self, source: Source, reason: impl fmt::Display) {
        let reason = reason.to_string();
        debug!(fact = %self.name, source = %source, reason = %reason, "source did not answer");
        self.tried.push(Attempt { source, reason });
    }

    /// Whether any source was tried so far.
    pub fn tried(&self) -> &[Attempt] {
        &self.tried
    }

    /// Closes the trail with a value.
    pub fn found(self, value: impl fmt::Display, source: Source) -> Fact {
        let value = value.to_string();
        debug!(fact = %self.name, source = %source, value = %value, "found");
        Fact {
            name: self.name,
            value: Some(value),
            source: Some(source),
            tried: self.tried,
        }
    }

    /// Closes the trail with the answer "there is none" (no device of a vendor): every place
    /// looked at is in the trail.
    pub fn none(self) -> Fact {
        debug!(fact = %self.name, "none");
        Fact {
            name: self.name,
            value: Some("none".to_string()),
            source: None,
            tried: self.tried,
        }
    }

    /// Closes the trail without a value.
    pub fn not_found(self) -> Fact {
        debug!(fact = %self.name, "no source answered");
        Fact {
            name: self.name,
            value: None,
            source: None,
            tried: self.tried,
        }
    }
}

/// The facts gathered so far, in the order they were found.
#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct Facts(pub Vec<Fact>);

impl Facts {
    /// Adds a fact.
    pub fn push(&mut self, fact: Fact) {
        self.0.push(fact);
    }

    /// The fact of that name, if recorded.
    pub fn get(&self, name: &str) -> Option<&Fact> {
        self.0.iter().find(|f| f.name == name)
    }

    /// All facts.
    pub fn iter(&self) -> impl Iterator<Item = &Fact> {
        self.0.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trail_keeps_failures_in_order() {
        let mut trail = Trail::new("nvidia.driver_version");
        trail.failed(Source::File("/sys/module/nvidia/version".into()), "missing");
        let fact = trail.found(
            "580.65.06",
            Source::File("/proc/driver/nvidia/version".into()),
        );
        assert_eq!(fact.value.as_deref(), Some("580.65.06"));
        assert_eq!(fact.tried.len(), 1);
        assert_eq!(
            serde_json::to_value(&fact).unwrap()["source"],
            "/proc/driver/nvidia/version"
        );
    }
}
