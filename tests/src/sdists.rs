//! Small real source distributions built in memory, as `.zip` archives (the format before PEP
//! 625 made `.tar.gz` the only one; pip and uv still build them, and indexes still serve them).
//!
//! Each carries its own PEP 517 build backend (`backend-path = ["."]`, `requires = []`), written
//! with the standard library alone, so pip and uv build the wheel in an isolated environment
//! with nothing to fetch from an index: no test reaches the internet, and none needs setuptools
//! published on a fake upstream.

use std::fmt::Write as _;
use std::io::{Cursor, Write as _};

use zip::write::SimpleFileOptions;
use zip::{CompressionMethod, DateTime, ZipWriter};

use crate::wheels::sha256_hex;

/// What to put in one source distribution.
#[derive(Debug, Clone)]
pub struct SdistSpec {
    /// Distribution name as published (`acme-legacy`).
    pub name: String,
    pub version: String,
    /// `Requires-Dist` lines.
    pub requires: Vec<String>,
}

/// A built source distribution.
#[derive(Debug, Clone)]
pub struct BuiltSdist {
    /// `acme_legacy-0.3.zip`
    pub filename: String,
    pub bytes: Vec<u8>,
    /// Hex sha256 of `bytes`.
    pub sha256: String,
}

/// `pyproject.toml`: the backend is the sdist's own file. No `[project]` table: the metadata is
/// `PKG-INFO`'s, as in an sdist made by a backend that generates it.
const PYPROJECT: &str = "[build-system]\nrequires = []\nbuild-backend = \"wheelgate_backend\"\nbackend-path = [\".\"]\n";

/// The backend, formatted with the wheel's module, version and `METADATA`'s `Requires-Dist`
/// taken from `PKG-INFO`. Its wheels are deterministic (fixed timestamps, fixed order), so the
/// same sdist built twice installs the same bytes.
const BACKEND: &str = r#""""The PEP 517 backend of a wheelgate end-to-end test sdist: the standard library only."""
import base64
import hashlib
import os
import zipfile

MODULE = "{module}"
VERSION = "{version}"


def _record_hash(data):
    digest = hashlib.sha256(data).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def get_requires_for_build_wheel(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    dist_info = f"{MODULE}-{VERSION}.dist-info"
    with open("PKG-INFO", "rb") as f:
        metadata = f.read()
    with open(os.path.join(MODULE, "__init__.py"), "rb") as f:
        module = f.read()
    wheel = b"Wheel-Version: 1.0\nGenerator: wheelgate-e2e-backend\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    files = [
        (f"{MODULE}/__init__.py", module),
        (f"{dist_info}/METADATA", metadata),
        (f"{dist_info}/WHEEL", wheel),
    ]
    record = "".join(f"{path},sha256={_record_hash(data)},{len(data)}\n" for path, data in files)
    files.append((f"{dist_info}/RECORD", (record + f"{dist_info}/RECORD,,\n").encode()))
    filename = f"{MODULE}-{VERSION}-py3-none-any.whl"
    with zipfile.ZipFile(os.path.join(wheel_directory, filename), "w") as archive:
        for path, data in files:
            archive.writestr(zipfile.ZipInfo(path, (1980, 1, 1, 0, 0, 0)), data)
    return filename
"#;

impl SdistSpec {
    pub fn new(name: &str, version: &str) -> Self {
        SdistSpec {
            name: name.to_string(),
            version: version.to_string(),
            requires: Vec::new(),
        }
    }

    #[must_use]
    pub fn requires(mut self, requirement: &str) -> Self {
        self.requires.push(requirement.to_string());
        self
    }

    /// The import name of its module, also the normalized name of its files (PEP 625).
    pub fn module(&self) -> String {
        self.name.to_ascii_lowercase().replace(['-', '.'], "_")
    }

    /// `acme_legacy-0.3.zip`
    pub fn filename(&self) -> String {
        format!("{}-{}.zip", self.module(), self.version)
    }

    fn pkg_info(&self) -> String {
        let mut text = format!(
            "Metadata-Version: 2.1\nName: {}\nVersion: {}\nSummary: wheelgate end-to-end test sdist of {}\n",
            self.name, self.version, self.name
        );
        for requirement in &self.requires {
            let _ = writeln!(text, "Requires-Dist: {requirement}");
        }
        text
    }

    /// Builds the archive. Deterministic: the same spec always gives the same bytes.
    pub fn build(&self) -> BuiltSdist {
        let module = self.module();
        let root = format!("{module}-{}", self.version);
        let backend = BACKEND
            .replace("{module}", &module)
            .replace("{version}", &self.version);
        let init = format!(
            "\"\"\"wheelgate end-to-end test sdist of {}.\"\"\"\n__version__ = \"{}\"\n",
            self.name, self.version
        );
        let files = [
            ("PKG-INFO".to_string(), self.pkg_info()),
            ("pyproject.toml".to_string(), PYPROJECT.to_string()),
            ("wheelgate_backend.py".to_string(), backend),
            (format!("{module}/__init__.py"), init),
        ];
        let mut writer = ZipWriter::new(Cursor::new(Vec::new()));
        let options = SimpleFileOptions::default()
            .compression_method(CompressionMethod::Stored)
            .last_modified_time(DateTime::default())
            .unix_permissions(0o644);
        for (path, content) in &files {
            writer
                .start_file(format!("{root}/{path}"), options)
                .expect("zip entry");
            writer.write_all(content.as_bytes()).expect("zip write");
        }
        let bytes = writer.finish().expect("zip finish").into_inner();
        BuiltSdist {
            filename: self.filename(),
            sha256: sha256_hex(&bytes),
            bytes,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read as _;

    #[test]
    fn sdist_holds_its_backend_and_metadata() {
        let spec = SdistSpec::new("acme-legacy", "0.3").requires("acme-core");
        let sdist = spec.build();
        assert_eq!(sdist.filename, "acme_legacy-0.3.zip");
        let mut archive = zip::ZipArchive::new(Cursor::new(sdist.bytes.clone())).unwrap();
        let mut text = String::new();
        archive
            .by_name("acme_legacy-0.3/PKG-INFO")
            .unwrap()
            .read_to_string(&mut text)
            .unwrap();
        assert!(text.contains("Name: acme-legacy\nVersion: 0.3\n"), "{text}");
        assert!(text.contains("Requires-Dist: acme-core\n"), "{text}");
        let mut backend = String::new();
        archive
            .by_name("acme_legacy-0.3/wheelgate_backend.py")
            .unwrap()
            .read_to_string(&mut backend)
            .unwrap();
        assert!(backend.contains("MODULE = \"acme_legacy\""), "{backend}");
        assert_eq!(sdist.bytes, spec.build().bytes);
    }
}
