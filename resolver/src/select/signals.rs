//! What a file says about its backend, and what to do when its signals disagree.
//!
//! A wheel on download.pytorch.org names its backend twice: in its local version label
//! (`torch-2.9.0+cu128-...whl`) and in the directory of its link (`/whl/cu128/...`). Unlabelled
//! wheels have only the directory. When both are present and disagree (`+cu128` under
//! `/whl/cu130/`), nothing says which is right, so the file is judged by the stricter reading:
//! it is kept only on a machine that runs both builds, and the explanation says so.

use std::collections::BTreeMap;

use super::text_hash::TextMap;

use crate::backend::{Backend, BackendParseError};
use crate::catalog::{Catalog, Release};
use crate::machine::Machine;

use super::check::check;
use super::decide::Policy;
use super::reason::Rejection;

/// The backend a wheel's own signals give it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Signals {
    /// The label's backend, else the directory's; `None` when neither names one.
    pub backend: Option<Backend>,
    /// The directory's backend when it disagrees with the label's.
    pub directory_disagrees: Option<Backend>,
}

/// What a page's labels and directories parse to: a page repeats each of them once per Python
/// and platform, so each distinct text is parsed once.
#[derive(Debug, Default, Clone)]
pub(super) struct ParsedNames {
    labels: TextMap<String, Result<Backend, BackendParseError>>,
    directories: TextMap<String, Option<Backend>>,
}

/// Reads a wheel's signals. A label shaped like a backend (`cu…`, `rocm…`, `xpu…`, `cpu…`)
/// that does not parse (`cu`, `rocm`, `xpu2`, `cu12.8`, `cpu.cxx11.abi`) is an error: such a
/// file is of an unknown build, never the release's default one. Other labels (`+git1234`)
/// say nothing about a backend.
pub(super) fn read_signals(
    filename: &str,
    label: Option<&str>,
    url: &str,
    parsed: &mut ParsedNames,
) -> Result<Signals, BackendParseError> {
    let label_backend = match label {
        Some(label) => match remembered(&mut parsed.labels, label, str::parse) {
            Ok(backend) => Some(backend),
            Err(error) if is_backend_shaped(label) => return Err(error),
            Err(_) => None,
        },
        None => None,
    };
    // The common case, `+cu128` under `/whl/cu128/`: the same text, nothing to parse.
    if label_backend.is_some()
        && label.is_some_and(|label| directory_is(url, filename.len(), label))
    {
        return Ok(Signals {
            backend: label_backend,
            directory_disagrees: None,
        });
    }
    // Only a segment shaped like a backend is looked up: PyPI's links put each file under a
    // directory of its own (its digest), so each would be a new entry, parsed and refused.
    let directory = directory_of(url)
        .filter(|segment| may_parse_as_backend(segment))
        .and_then(|segment| {
            remembered(&mut parsed.directories, segment, |segment| {
                segment.parse().ok()
            })
        });
    Ok(match (label_backend, directory) {
        (Some(label), Some(directory)) if label != directory => Signals {
            backend: Some(label),
            directory_disagrees: Some(directory),
        },
        (Some(backend), _) | (None, Some(backend)) => Signals {
            backend: Some(backend),
            directory_disagrees: None,
        },
        (None, None) => Signals {
            backend: None,
            directory_disagrees: None,
        },
    })
}

/// What `text` parses to, parsed only the first time it is seen.
fn remembered<T: Clone>(seen: &mut TextMap<String, T>, text: &str, parse: impl Fn(&str) -> T) -> T {
    if let Some(parsed) = seen.get(text) {
        return parsed.clone();
    }
    let parsed = parse(text);
    seen.insert(text.to_string(), parsed.clone());
    parsed
}

/// Whether `text` starts as a backend name must ([`Backend`]'s parse is case-sensitive): a cheap
/// test that rules out most directories without parsing them.
fn may_parse_as_backend(text: &str) -> bool {
    text.starts_with("cu") || text.starts_with("rocm") || text == "cpu" || text == "xpu"
}

/// Whether a label claims to name a backend.
fn is_backend_shaped(label: &str) -> bool {
    let lower = label.to_ascii_lowercase();
    ["cu", "rocm", "xpu", "cpu"]
        .iter()
        .any(|prefix| lower.starts_with(prefix))
}

/// Whether the link's directory is `label`, cheaply: this runs for every file of a page of
/// thousands. A link ends in the filename (percent-encoding only lengthens it) and, on PyTorch's
/// and PyPI's pages, a `#sha256=` fragment of fixed length, so the `/` before the filename is
/// found without scanning the link. A miss only means the careful reading runs.
fn directory_is(url: &str, filename_len: usize, label: &str) -> bool {
    const FRAGMENT: usize = "#sha256=".len() + 64;
    let bytes = url.as_bytes();
    let end = if bytes.len() >= FRAGMENT && bytes[bytes.len() - FRAGMENT] == b'#' {
        bytes.len() - FRAGMENT
    } else {
        bytes.len()
    };
    let Some(head) = end.checked_sub(filename_len).map(|n| &bytes[..n]) else {
        return false;
    };
    let Some(slash) = head.iter().rposition(|&b| b == b'/') else {
        return false;
    };
    let start = head[..slash]
        .iter()
        .rposition(|&b| b == b'/')
        .map_or(0, |i| i + 1);
    &head[start..slash] == label.as_bytes()
}

/// The directory of a link (`cu124` in `/whl/cu124/torch-2.5.0-...whl`), which names the
/// backend on download.pytorch.org, and is all the few wheels without a local label carry.
fn directory_of(url: &str) -> Option<&str> {
    // Byte searches, one pass for the path's end: each `find` and `rsplit_once` with a char
    // set up a searcher, four per unlabelled wheel of a page.
    let end = memchr::memchr2(b'#', b'?', url.as_bytes()).unwrap_or(url.len());
    let path = &url[..end];
    let slash = memchr::memrchr(b'/', path.as_bytes())?;
    let directory = &path[..slash];
    Some(memchr::memrchr(b'/', directory.as_bytes()).map_or(directory, |at| &directory[at + 1..]))
}

/// The verdict on the files of one (label, directory) disagreement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Verdict {
    /// The machine runs both readings: kept.
    Kept,
    /// The directory's reading does not run here (or a pin excludes it): dropped.
    Dropped(Rejection),
}

/// Judges every disagreement of one version: `pairs` maps (label backend, directory backend)
/// to its number of files. Returns each pair's verdict and the notes that explain them.
pub(super) fn judge(
    catalog: &Catalog,
    machine: &Machine,
    policy: &Policy,
    release: &Release,
    pairs: &BTreeMap<(Backend, Backend), usize>,
) -> (BTreeMap<(Backend, Backend), Verdict>, Vec<String>) {
    let mut verdicts = BTreeMap::new();
    let mut notes = Vec::new();
    for ((label, directory), count) in pairs {
        // Under a pin the probes do not decide, and a file that may be another build than
        // the pinned one is not the pinned build: dropped.
        let verdict = if let Some(pinned) = &policy.pinned {
            Verdict::Dropped(Rejection::NotPinned {
                pinned: pinned.clone(),
            })
        } else {
            let rules = catalog.backend_rules(release, directory, machine.platform);
            match check(machine, &rules) {
                Ok(_) => Verdict::Kept,
                Err(rejection) => Verdict::Dropped(rejection),
            }
        };
        let files = if *count == 1 {
            "1 file".to_string()
        } else {
            format!("{count} files")
        };
        let outcome = match &verdict {
            Verdict::Kept => "both run here, so they are kept".to_string(),
            Verdict::Dropped(reason) => format!("dropped, as {directory}: {reason}"),
        };
        notes.push(format!(
            "{label}: {files} labelled {label} sit in the {directory} directory; the signals disagree, so they are judged by the stricter reading (they must run as both {label} and {directory}): {outcome}"
        ));
        verdicts.insert((label.clone(), directory.clone()), verdict);
    }
    (verdicts, notes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_labels_directories_and_their_disagreement() {
        let mut cache = ParsedNames::default();
        let read = |label, url, cache: &mut ParsedNames| {
            read_signals(
                "torch-2.9.0+cu128-cp312-cp312-linux_x86_64.whl",
                label,
                url,
                cache,
            )
        };
        let agree = read(Some("cu128"), "/whl/cu128/torch.whl", &mut cache).unwrap();
        assert_eq!(agree.backend, Some("cu128".parse().unwrap()));
        assert_eq!(agree.directory_disagrees, None);
        let disagree = read(Some("cu128"), "/whl/cu130/torch.whl", &mut cache).unwrap();
        assert_eq!(disagree.directory_disagrees, Some("cu130".parse().unwrap()));
        let unlabelled = read(None, "/whl/cu124/torch.whl", &mut cache).unwrap();
        assert_eq!(unlabelled.backend, Some("cu124".parse().unwrap()));
        let neutral = read(Some("git1234"), "/files/torch.whl", &mut cache).unwrap();
        assert_eq!(neutral.backend, None);
        // The shortcut for an agreeing directory, with and without a hash fragment, and on
        // links it cannot read (shorter than the filename, no slash, multibyte text).
        let name = "torch-2.9.0+cu128-cp312-cp312-linux_x86_64.whl";
        let link = format!("/whl/cu128/{}", name.replace('+', "%2B"));
        assert!(directory_is(&link, name.len(), "cu128"));
        assert!(directory_is(
            &format!("{link}#sha256={}", "0".repeat(64)),
            name.len(),
            "cu128"
        ));
        assert!(!directory_is(
            &format!("/whl/cu130/{name}"),
            name.len(),
            "cu128"
        ));
        assert!(!directory_is("cu128", name.len(), "cu128"));
        assert!(!directory_is(&"é".repeat(40), 3, "cu128"));
        for bad in ["cu", "rocm", "xpu2", "cu12.8", "cpu.cxx11.abi"] {
            let error = read(Some(bad), "/whl/torch.whl", &mut cache).unwrap_err();
            assert!(error.to_string().contains(&format!("`{bad}`")), "{error}");
        }
    }
}
