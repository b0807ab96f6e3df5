//! What the soak's upstream serves: `PROJECTS` projects, each with `FILES_PER_PROJECT` wheels of
//! deterministic bytes (generated, never stored twice) and their PEP 658 metadata.

use std::fmt::Write as _;

use sha2::{Digest, Sha256};

pub const PROJECTS: usize = 8;
pub const FILES_PER_PROJECT: usize = 400;

/// One wheel of the corpus.
#[derive(Debug, Clone)]
pub struct SoakFile {
    pub project: String,
    pub filename: String,
    pub len: usize,
    pub seed: u64,
    pub sha256: String,
    pub metadata: String,
    pub metadata_sha256: String,
}

impl SoakFile {
    /// The file's bytes.
    pub fn bytes(&self) -> Vec<u8> {
        bytes(self.seed, self.len)
    }
}

/// Deterministic, non-repeating-looking bytes (xorshift).
pub fn bytes(seed: u64, len: usize) -> Vec<u8> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut out = Vec::with_capacity(len + 8);
    while out.len() < len {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        out.extend_from_slice(&state.to_le_bytes());
    }
    out.truncate(len);
    out
}

/// The whole corpus: sizes from 16 KiB to about 2 MiB for the first files of each project (the
/// cached set), to 512 KiB for the rest (cold files, downloaded through the run).
pub fn corpus() -> Vec<SoakFile> {
    let mut files = Vec::new();
    for p in 0..PROJECTS {
        let project = format!("soak{p}");
        for f in 0..FILES_PER_PROJECT {
            let seed = (p * 1000 + f) as u64 + 1;
            let spread = if f < 20 { 2 * 1024 * 1024 } else { 512 * 1024 };
            let len = 16 * 1024 + (f * 7919 + p * 104_729) % spread;
            let filename = format!("{project}-1.{f}-py3-none-any.whl");
            let content = bytes(seed, len);
            let metadata = format!(
                "Metadata-Version: 2.1\nName: {project}\nVersion: 1.{f}\nRequires-Python: >=3.8\n"
            );
            files.push(SoakFile {
                sha256: hex::encode(Sha256::digest(&content)),
                metadata_sha256: hex::encode(Sha256::digest(metadata.as_bytes())),
                project: project.clone(),
                filename,
                len,
                seed,
                metadata,
            });
        }
    }
    files
}

/// The PEP 503 page of `project`: every file with its hash and metadata hash.
pub fn page(files: &[SoakFile], project: &str) -> String {
    let mut out = format!(
        "<!DOCTYPE html>\n<html><head><title>Links for {project}</title></head><body>\n<h1>Links for {project}</h1>\n"
    );
    for file in files.iter().filter(|f| f.project == project) {
        let _ = writeln!(
            out,
            "<a href=\"/f/{name}#sha256={sha}\" data-requires-python=\"&gt;=3.8\" data-core-metadata=\"sha256={meta}\">{name}</a><br/>",
            name = file.filename,
            sha = file.sha256,
            meta = file.metadata_sha256
        );
    }
    out.push_str("</body></html>\n");
    out
}
