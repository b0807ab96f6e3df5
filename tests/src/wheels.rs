//! Small real wheels (PEP 427) built in memory: a zip with one tiny module and a
//! `<name>-<version>.dist-info/` holding `METADATA`, `WHEEL` and a `RECORD` with correct hashes,
//! so pip and uv install them like any other wheel.

use std::fmt::Write as _;
use std::io::{Cursor, Write as _};

use sha2::{Digest as _, Sha256};
use zip::write::SimpleFileOptions;
use zip::{CompressionMethod, DateTime, ZipWriter};

/// What to put in one wheel.
#[derive(Debug, Clone)]
pub struct WheelSpec {
    /// Distribution name as published (`torch`, `pytorch-triton`).
    pub name: String,
    /// Full version, local label included (`2.9.0+cu130`).
    pub version: String,
    /// Compatibility tags: `py3-none-manylinux_2_28_x86_64` (compressed tag sets allowed).
    pub tags: String,
    /// `Requires-Dist` lines (`filelock`, `torch==2.9.0`).
    pub requires: Vec<String>,
    /// `Requires-Python`, if any.
    pub requires_python: Option<String>,
    /// `Provides-Extra` lines (`device-gfx942`).
    pub provides_extra: Vec<String>,
    /// More files in `*.dist-info/` (a variant wheel's `variant.json`), by name.
    pub dist_info_files: Vec<(String, String)>,
}

/// A built wheel and its PEP 658 metadata file.
#[derive(Debug, Clone)]
pub struct BuiltWheel {
    /// `torch-2.9.0+cu130-py3-none-manylinux_2_28_x86_64.whl`
    pub filename: String,
    pub bytes: Vec<u8>,
    /// Hex sha256 of `bytes`.
    pub sha256: String,
    /// The wheel's `METADATA`, served as `<wheel URL>.metadata`.
    pub metadata: Vec<u8>,
    /// Hex sha256 of `metadata`.
    pub metadata_sha256: String,
}

impl WheelSpec {
    pub fn new(name: &str, version: &str, tags: &str) -> Self {
        WheelSpec {
            name: name.to_string(),
            version: version.to_string(),
            tags: tags.to_string(),
            requires: Vec::new(),
            requires_python: None,
            provides_extra: Vec::new(),
            dist_info_files: Vec::new(),
        }
    }

    #[must_use]
    pub fn requires(mut self, requirement: &str) -> Self {
        self.requires.push(requirement.to_string());
        self
    }

    /// Declares the extra `name` (its requirements are `requires` lines with `extra == "name"`).
    #[must_use]
    pub fn provides_extra(mut self, name: &str) -> Self {
        self.provides_extra.push(name.to_string());
        self
    }

    #[must_use]
    pub fn requires_python(mut self, specifier: &str) -> Self {
        self.requires_python = Some(specifier.to_string());
        self
    }

    /// The wheel file name (PEP 427: `-` in the name becomes `_`).
    pub fn filename(&self) -> String {
        format!(
            "{}-{}-{}.whl",
            self.name.replace('-', "_"),
            self.version,
            self.tags
        )
    }

    /// The import name of the wheel's module (`pytorch-triton` → `pytorch_triton`).
    pub fn module(&self) -> String {
        self.name.replace('-', "_")
    }

    fn metadata(&self) -> String {
        let mut text = format!(
            "Metadata-Version: 2.1\nName: {}\nVersion: {}\nSummary: wheelgate end-to-end test build of {}\n",
            self.name, self.version, self.name
        );
        if let Some(python) = &self.requires_python {
            let _ = writeln!(text, "Requires-Python: {python}");
        }
        for extra in &self.provides_extra {
            let _ = writeln!(text, "Provides-Extra: {extra}");
        }
        for requirement in &self.requires {
            let _ = writeln!(text, "Requires-Dist: {requirement}");
        }
        text
    }

    fn wheel_file(&self) -> String {
        let mut text = String::from("Wheel-Version: 1.0\nGenerator: wheelgate-e2e\n");
        let pure = self.tags.ends_with("-any");
        text.push_str(if pure {
            "Root-Is-Purelib: true\n"
        } else {
            "Root-Is-Purelib: false\n"
        });
        // A compressed tag set (`py3-none-a.b`) expands to one `Tag:` line per tag.
        let mut parts = self.tags.splitn(3, '-');
        let (python, abi, platform) = (
            parts.next().unwrap(),
            parts.next().unwrap(),
            parts.next().unwrap(),
        );
        for py in python.split('.') {
            for ab in abi.split('.') {
                for plat in platform.split('.') {
                    let _ = writeln!(text, "Tag: {py}-{ab}-{plat}");
                }
            }
        }
        text
    }

    /// Builds the wheel. Deterministic: the same spec always gives the same bytes.
    pub fn build(&self) -> BuiltWheel {
        let module = self.module();
        let dist_info = format!("{}-{}.dist-info", module, self.version);
        let init = format!(
            "\"\"\"wheelgate end-to-end test build of {name}.\"\"\"\n__version__ = \"{version}\"\nBUILD = \"{tags}\"\n",
            name = self.name,
            version = self.version,
            tags = self.tags,
        );
        let metadata = self.metadata();
        let mut files: Vec<(String, Vec<u8>)> = vec![
            (format!("{module}/__init__.py"), init.into_bytes()),
            (
                format!("{dist_info}/METADATA"),
                metadata.clone().into_bytes(),
            ),
            (format!("{dist_info}/WHEEL"), self.wheel_file().into_bytes()),
        ];
        for (name, content) in &self.dist_info_files {
            files.push((format!("{dist_info}/{name}"), content.clone().into_bytes()));
        }
        let mut record = String::new();
        for (path, content) in &files {
            let _ = writeln!(
                record,
                "{path},sha256={},{}",
                record_hash(content),
                content.len()
            );
        }
        let _ = writeln!(record, "{dist_info}/RECORD,,");

        let mut writer = ZipWriter::new(Cursor::new(Vec::new()));
        let options = SimpleFileOptions::default()
            .compression_method(CompressionMethod::Stored)
            .last_modified_time(DateTime::default())
            .unix_permissions(0o644);
        for (path, content) in files
            .iter()
            .chain([&(format!("{dist_info}/RECORD"), record.into_bytes())])
        {
            writer
                .start_file(path.as_str(), options)
                .expect("zip entry");
            writer.write_all(content).expect("zip write");
        }
        let bytes = writer.finish().expect("zip finish").into_inner();
        let metadata = metadata.into_bytes();
        BuiltWheel {
            filename: self.filename(),
            sha256: sha256_hex(&bytes),
            metadata_sha256: sha256_hex(&metadata),
            bytes,
            metadata,
        }
    }
}

/// Hex sha256, as index pages write it.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// `RECORD`'s hash form: urlsafe base64 of the sha256 without padding (PEP 376, PEP 427).
fn record_hash(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let digest = Sha256::digest(bytes);
    let mut out = String::with_capacity(43);
    for chunk in digest.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        let symbols = chunk.len() + 1;
        for i in 0..symbols {
            out.push(char::from(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize]));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read as _;

    #[test]
    fn record_hash_is_unpadded_urlsafe_base64() {
        // sha256("") in the RECORD form, as pip writes it.
        assert_eq!(
            record_hash(b""),
            "47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU"
        );
    }

    #[test]
    fn wheel_has_dist_info_and_module() {
        let wheel = WheelSpec::new(
            "pytorch-triton",
            "3.5.0",
            "py3-none-manylinux_2_27_x86_64.manylinux_2_28_x86_64",
        )
        .requires("filelock")
        .build();
        assert_eq!(
            wheel.filename,
            "pytorch_triton-3.5.0-py3-none-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl"
        );
        let mut archive = zip::ZipArchive::new(Cursor::new(wheel.bytes.clone())).unwrap();
        let mut wheel_file = String::new();
        archive
            .by_name("pytorch_triton-3.5.0.dist-info/WHEEL")
            .unwrap()
            .read_to_string(&mut wheel_file)
            .unwrap();
        assert!(wheel_file.contains(
            "Tag: py3-none-manylinux_2_27_x86_64\nTag: py3-none-manylinux_2_28_x86_64\n"
        ));
        let mut record = String::new();
        archive
            .by_name("pytorch_triton-3.5.0.dist-info/RECORD")
            .unwrap()
            .read_to_string(&mut record)
            .unwrap();
        assert!(
            record.contains("pytorch_triton/__init__.py,sha256="),
            "{record}"
        );
        assert!(
            String::from_utf8(wheel.metadata)
                .unwrap()
                .contains("Requires-Dist: filelock\n")
        );
        assert_eq!(
            wheel.bytes,
            WheelSpec::new(
                "pytorch-triton",
                "3.5.0",
                "py3-none-manylinux_2_27_x86_64.manylinux_2_28_x86_64"
            )
            .requires("filelock")
            .build()
            .bytes
        );
    }
}
