//! Distribution filenames: wheels (PEP 427, with PEP 825's optional variant label) and sdists
//! (PEP 625, plus the legacy `.zip` form).

use std::fmt;
use std::str::FromStr;

use pep440_rs::Version;

use crate::backend::Backend;

mod charset;

pub use charset::is_valid_variant_label;
use charset::{
    Classes, valid_label_of, valid_name, valid_name_of, valid_tag_part, valid_tag_part_of,
    valid_tag_set_of,
};

/// A wheel filename, split into its components.
///
/// `{name}-{version}(-{build})?-{python}-{abi}-{platform}(-{variant label})?.whl`; the three tag
/// components may be compressed sets (`py2.py3`, `manylinux_2_28_x86_64.manylinux2014_x86_64`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WheelFilename {
    /// The distribution name as written (`torch`, `nvidia_cudnn_cu12`).
    pub name: String,
    /// The version, local label included (`2.9.0+cu128`).
    pub version: Version,
    /// The build tag (`1` in `torch-2.0.0-1-cp310-...`).
    pub build_tag: Option<BuildTag>,
    /// The python tags (PEP 425), the compressed set expanded (`cp310`, `py3`).
    pub python_tags: Vec<String>,
    /// The ABI tags (PEP 425), expanded (`cp310`, `abi3`, `none`).
    pub abi_tags: Vec<String>,
    /// The platform tags (PEP 425, 600, 656), expanded (`manylinux_2_28_x86_64`, `any`).
    pub platform_tags: Vec<String>,
    /// The PEP 825 variant label (`cuda12.8`, `null`, `x86_64_v3`).
    pub variant_label: Option<String>,
    /// The local version label as written in the filename (`cu128`, `rocm6.2.4`).
    local_label: Option<String>,
}

/// A wheel build tag: a number with an optional suffix, ordered number first.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct BuildTag {
    /// The leading number, compared first.
    pub number: u64,
    /// The rest of the tag after the number, compared as a string; empty when there is none.
    pub suffix: String,
}

/// A source distribution filename (`torch-2.9.0.tar.gz`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SdistFilename {
    /// The distribution name as written.
    pub name: String,
    /// The version after the last `-` of the stem.
    pub version: Version,
    /// The archive format.
    pub extension: SdistExtension,
}

/// The archive formats of sdists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SdistExtension {
    /// `.tar.gz` (PEP 625).
    TarGz,
    /// `.zip`, the legacy form.
    Zip,
}

/// Either kind of distribution filename.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DistFilename {
    /// A wheel (`.whl`).
    Wheel(WheelFilename),
    /// A source distribution (`.tar.gz` or `.zip`).
    Sdist(SdistFilename),
}

/// Why a filename could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FilenameError {
    /// The name ends in none of `.whl`, `.tar.gz` or `.zip`; holds the filename.
    #[error("`{0}` is not a wheel or sdist filename (expected `.whl`, `.tar.gz` or `.zip`)")]
    UnknownExtension(String),
    /// A wheel name with fewer than 5 or more than 7 dash-separated components (PEP 427, PEP 825).
    #[error("wheel filename `{filename}` has {count} dash-separated components; expected 5 to 7")]
    ComponentCount {
        /// The filename as given.
        filename: String,
        /// How many components it has.
        count: usize,
    },
    /// The distribution name is empty or has characters PEP 427 does not allow.
    #[error("`{filename}` has an invalid distribution name `{name}`")]
    InvalidName {
        /// The filename as given.
        filename: String,
        /// The name component as written.
        name: String,
    },
    /// The version component is not a PEP 440 version.
    #[error("`{filename}` has an invalid version `{version}`: {reason}")]
    InvalidVersion {
        /// The filename as given.
        filename: String,
        /// The version component as written.
        version: String,
        /// The version parser's message.
        reason: String,
    },
    /// The build tag does not start with a digit.
    #[error("`{filename}` has an invalid build tag `{tag}` (it must start with a digit)")]
    InvalidBuildTag {
        /// The filename as given.
        filename: String,
        /// The build tag as written.
        tag: String,
    },
    /// A python, ABI or platform tag set has an empty part or a character other than letters,
    /// digits and `_`.
    #[error("`{filename}` has an empty or invalid tag in `{tag}`")]
    InvalidTag {
        /// The filename as given.
        filename: String,
        /// The tag set as written.
        tag: String,
    },
    /// The PEP 825 variant label has characters outside `0-9 a-z _ .`.
    #[error("`{filename}` has an invalid variant label `{label}` (allowed: `0-9 a-z _ .`)")]
    InvalidVariantLabel {
        /// The filename as given.
        filename: String,
        /// The label as written.
        label: String,
    },
    /// An sdist name with no `-<version>` after the distribution name; holds the filename.
    #[error("sdist filename `{0}` has no `-<version>` part")]
    SdistWithoutVersion(String),
}

fn parse_version(filename: &str, text: &str) -> Result<Version, FilenameError> {
    text.parse::<Version>()
        .map_err(|err| FilenameError::InvalidVersion {
            filename: filename.to_string(),
            version: text.to_string(),
            reason: err.to_string(),
        })
}

/// A wheel filename split into borrowed, validated components, the version not yet parsed: the
/// cheap first step of [`WheelFilename`] parsing, used directly where a page of thousands of
/// names is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WheelParts<'a> {
    /// The distribution name as written.
    pub name: &'a str,
    /// The version as written, local label included (`2.9.0+cu128`).
    pub version: &'a str,
    /// The build tag as written, when there is one.
    pub build: Option<&'a str>,
    /// The compressed tag sets as written (`py2.py3`).
    pub python: &'a str,
    /// The ABI tag set as written (`cp310`).
    pub abi: &'a str,
    /// The platform tag set as written (`manylinux_2_28_x86_64`).
    pub platform: &'a str,
    /// The PEP 825 variant label, when there is one.
    pub variant_label: Option<&'a str>,
}

impl<'a> WheelParts<'a> {
    // A real example of this parser's input, from download.pytorch.org/whl/cu130/torch/:
    // `torch-2.10.0+cu130-cp310-cp310-manylinux_2_28_aarch64.whl`
    /// Splits and validates a wheel filename without parsing its version.
    pub fn split(filename: &'a str) -> Result<Self, FilenameError> {
        let stem = filename
            .strip_suffix(".whl")
            .ok_or_else(|| FilenameError::UnknownExtension(filename.to_string()))?;
        // One pass over the bytes, splitting at each `-` and classing every other byte for its
        // component's check (`filename/charset.rs`): a page's thousands of names are split where
        // it is parsed, and a search per component, then a check per component, read each
        // name two and three times.
        let mut parts = [""; 7];
        let mut classes = [Classes::EMPTY; 7];
        let mut count = 0;
        let mut start = 0;
        let mut current = Classes::EMPTY;
        for (at, &byte) in stem.as_bytes().iter().enumerate() {
            if byte == b'-' {
                if count < parts.len() {
                    parts[count] = &stem[start..at];
                    classes[count] = current;
                }
                count += 1;
                start = at + 1;
                current = Classes::EMPTY;
            } else {
                current = current.with(byte);
            }
        }
        if count < parts.len() {
            parts[count] = &stem[start..];
            classes[count] = current;
        }
        count += 1;
        // PEP 825: six components are name, version, build, python, abi, platform when the third
        // starts with a digit, otherwise name, version, python, abi, platform, label. Each as its
        // index among the components.
        let (build, tags, label) = match count {
            5 => (None, [2, 3, 4], None),
            6 if parts[2].as_bytes().first().is_some_and(u8::is_ascii_digit) => {
                (Some(2), [3, 4, 5], None)
            }
            6 => (None, [2, 3, 4], Some(5)),
            7 => (Some(2), [3, 4, 5], Some(6)),
            count => {
                return Err(FilenameError::ComponentCount {
                    filename: filename.to_string(),
                    count,
                });
            }
        };
        let name = parts[0];
        if !valid_name_of(name, classes[0]) {
            return Err(FilenameError::InvalidName {
                filename: filename.to_string(),
                name: name.to_string(),
            });
        }
        if parts[1].is_empty() {
            return Err(FilenameError::InvalidVersion {
                filename: filename.to_string(),
                version: String::new(),
                reason: "the version is empty".to_string(),
            });
        }
        if let Some(at) = build {
            let tag = parts[at];
            let digits = tag.bytes().take_while(u8::is_ascii_digit).count();
            if digits == 0 || !valid_tag_part_of(tag, classes[at]) {
                return Err(FilenameError::InvalidBuildTag {
                    filename: filename.to_string(),
                    tag: tag.to_string(),
                });
            }
        }
        for at in tags {
            if !valid_tag_set_of(parts[at], classes[at]) {
                return Err(FilenameError::InvalidTag {
                    filename: filename.to_string(),
                    tag: parts[at].to_string(),
                });
            }
        }
        if let Some(at) = label
            && !valid_label_of(parts[at], classes[at])
        {
            return Err(FilenameError::InvalidVariantLabel {
                filename: filename.to_string(),
                label: parts[at].to_string(),
            });
        }
        let [python, abi, platform] = tags.map(|at| parts[at]);
        Ok(WheelParts {
            name,
            version: parts[1],
            build: build.map(|at| parts[at]),
            python,
            abi,
            platform,
            variant_label: label.map(|at| parts[at]),
        })
    }

    /// The local version label as written (`cu128` for `2.9.0+cu128`).
    pub fn local_label(&self) -> Option<&'a str> {
        // A byte search: `split_once` with a char set up a searcher for every wheel of a page.
        let plus = memchr::memchr(b'+', self.version.as_bytes())?;
        Some(&self.version[plus + 1..])
    }

    /// The platform tags of the compressed set.
    pub fn platform_tags(&self) -> impl Iterator<Item = &'a str> + use<'a> {
        self.platform.split('.')
    }
}

impl FromStr for WheelFilename {
    type Err = FilenameError;

    fn from_str(filename: &str) -> Result<Self, Self::Err> {
        let parts = WheelParts::split(filename)?;
        let split = |tags: &str| tags.split('.').map(str::to_string).collect::<Vec<_>>();
        Ok(WheelFilename {
            name: parts.name.to_string(),
            version: parse_version(filename, parts.version)?,
            build_tag: parts
                .build
                .map(|tag| parse_build_tag(filename, tag))
                .transpose()?,
            python_tags: split(parts.python),
            abi_tags: split(parts.abi),
            platform_tags: split(parts.platform),
            variant_label: parts.variant_label.map(str::to_string),
            local_label: parts.local_label().map(str::to_string),
        })
    }
}

fn parse_build_tag(filename: &str, tag: &str) -> Result<BuildTag, FilenameError> {
    let error = || FilenameError::InvalidBuildTag {
        filename: filename.to_string(),
        tag: tag.to_string(),
    };
    let digits = tag.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 || !valid_tag_part(tag) {
        return Err(error());
    }
    let number = tag[..digits].parse().map_err(|_| error())?;
    Ok(BuildTag {
        number,
        suffix: tag[digits..].to_string(),
    })
}

impl WheelFilename {
    /// The local version label as written (`cu128` for `2.9.0+cu128`).
    pub fn local_label(&self) -> Option<&str> {
        self.local_label.as_deref()
    }

    /// The backend named by the local version label (`+cu128`), if it names one.
    pub fn label_backend(&self) -> Option<Backend> {
        self.local_label
            .as_deref()
            .and_then(|label| label.parse().ok())
    }
}

impl fmt::Display for WheelFilename {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.name, self.version)?;
        if let Some(build) = &self.build_tag {
            write!(f, "-{}{}", build.number, build.suffix)?;
        }
        write!(
            f,
            "-{}-{}-{}",
            self.python_tags.join("."),
            self.abi_tags.join("."),
            self.platform_tags.join(".")
        )?;
        if let Some(label) = &self.variant_label {
            write!(f, "-{label}")?;
        }
        f.write_str(".whl")
    }
}

// A real example of this parser's input, from PyPI: `torch-2.9.0.tar.gz`; legacy names may keep
// dashes in the project name (`python-dateutil-2.8.2.tar.gz`).
impl FromStr for SdistFilename {
    type Err = FilenameError;

    fn from_str(filename: &str) -> Result<Self, Self::Err> {
        let (stem, extension) = if let Some(stem) = filename.strip_suffix(".tar.gz") {
            (stem, SdistExtension::TarGz)
        } else if let Some(stem) = filename.strip_suffix(".zip") {
            (stem, SdistExtension::Zip)
        } else {
            return Err(FilenameError::UnknownExtension(filename.to_string()));
        };
        // The version is the part after the last dash whose remainder parses as a version.
        let mut split_at = None;
        for (index, _) in stem.match_indices('-') {
            if stem[index + 1..].parse::<Version>().is_ok() && valid_name(&stem[..index]) {
                split_at = Some(index);
                break;
            }
        }
        let index =
            split_at.ok_or_else(|| FilenameError::SdistWithoutVersion(filename.to_string()))?;
        Ok(SdistFilename {
            name: stem[..index].to_string(),
            version: parse_version(filename, &stem[index + 1..])?,
            extension,
        })
    }
}

impl FromStr for DistFilename {
    type Err = FilenameError;

    fn from_str(filename: &str) -> Result<Self, Self::Err> {
        if std::path::Path::new(filename)
            .extension()
            .is_some_and(|ext| ext.eq_ignore_ascii_case("whl"))
        {
            filename.parse().map(DistFilename::Wheel)
        } else {
            filename.parse().map(DistFilename::Sdist)
        }
    }
}

impl DistFilename {
    /// The distribution name as written in the filename.
    pub fn name(&self) -> &str {
        match self {
            DistFilename::Wheel(w) => &w.name,
            DistFilename::Sdist(s) => &s.name,
        }
    }

    /// The version parsed from the filename.
    pub fn version(&self) -> &Version {
        match self {
            DistFilename::Wheel(w) => &w.version,
            DistFilename::Sdist(s) => &s.version,
        }
    }
}

/// [`normalize_name`], borrowing `name` when it is normalized already (what installers ask
/// for: the proxy normalizes every page request's name).
pub fn normalized_name(name: &str) -> std::borrow::Cow<'_, str> {
    let bytes = name.as_bytes();
    let already = bytes.first().is_none_or(|&b| b != b'-')
        && bytes.last().is_none_or(|&b| b != b'-')
        && !bytes.windows(2).any(|pair| pair == b"--")
        && !bytes
            .iter()
            .any(|&b| b == b'_' || b == b'.' || b.is_ascii_uppercase());
    if already {
        std::borrow::Cow::Borrowed(name)
    } else {
        std::borrow::Cow::Owned(normalize_name(name))
    }
}

/// Whether `filename` names a wheel: it ends in `.whl`, in any case, as installers read it.
pub fn is_wheel(filename: &str) -> bool {
    let name = filename.as_bytes();
    name.len() > 4 && name[name.len() - 4..].eq_ignore_ascii_case(b".whl")
}

/// Normalizes a project name per PEP 503: runs of `-`, `_`, `.` become one `-`, lowercased.
pub fn normalize_name(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut pending_dash = false;
    for c in name.chars() {
        if matches!(c, '-' | '_' | '.') {
            pending_dash = true;
        } else {
            if pending_dash && !out.is_empty() {
                out.push('-');
            }
            pending_dash = false;
            out.push(c.to_ascii_lowercase());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// What [`WheelParts::split`] accepts, read the plain way: split at every `-`, then each
    /// component checked on its own.
    fn split_plainly(filename: &str) -> Option<WheelParts<'_>> {
        let parts: Vec<&str> = filename.strip_suffix(".whl")?.split('-').collect();
        let tag_set = |tags: &str| tags.split('.').all(valid_tag_part);
        let (build, tags, label) = match parts.len() {
            5 => (None, &parts[2..5], None),
            6 if parts[2].starts_with(|c: char| c.is_ascii_digit()) => {
                (Some(parts[2]), &parts[3..6], None)
            }
            6 => (None, &parts[2..5], Some(parts[5])),
            7 => (Some(parts[2]), &parts[3..6], Some(parts[6])),
            _ => return None,
        };
        let valid = valid_name(parts[0])
            && !parts[1].is_empty()
            && build
                .is_none_or(|b| b.starts_with(|c: char| c.is_ascii_digit()) && valid_tag_part(b))
            && tags.iter().all(|t| tag_set(t))
            && label.is_none_or(is_valid_variant_label);
        valid.then(|| WheelParts {
            name: parts[0],
            version: parts[1],
            build,
            python: tags[0],
            abi: tags[1],
            platform: tags[2],
            variant_label: label,
        })
    }

    proptest! {
        #[test]
        fn splitting_in_one_pass_agrees_with_splitting_plainly(
            components in prop::collection::vec("[a-zA-Z0-9_.+]{0,6}", 3..9),
        ) {
            let filename = format!("{}.whl", components.join("-"));
            prop_assert_eq!(WheelParts::split(&filename).ok(), split_plainly(&filename));
        }
    }

    #[test]
    fn parses_pytorch_wheel_with_local_label() {
        let wheel: WheelFilename = "torch-2.10.0+cu130-cp310-cp310-manylinux_2_28_aarch64.whl"
            .parse()
            .unwrap();
        assert_eq!(wheel.name, "torch");
        assert_eq!(wheel.version.to_string(), "2.10.0+cu130");
        assert_eq!(wheel.local_label(), Some("cu130"));
        assert_eq!(wheel.label_backend(), Some("cu130".parse().unwrap()));
        assert_eq!(wheel.platform_tags, ["manylinux_2_28_aarch64"]);
        assert_eq!(wheel.variant_label, None);
    }

    #[test]
    fn parses_build_tags_and_variant_labels_by_the_pep_825_rule() {
        let wheel: WheelFilename = "torch-2.0.0-1-cp310-cp310-manylinux2014_aarch64.whl"
            .parse()
            .unwrap();
        assert_eq!(
            wheel.build_tag,
            Some(BuildTag {
                number: 1,
                suffix: String::new()
            })
        );
        assert_eq!(wheel.variant_label, None);

        let wheel: WheelFilename = "torch-2.9.0-cp313-cp313-manylinux_2_28_x86_64-cuda12.8.whl"
            .parse()
            .unwrap();
        assert_eq!(wheel.variant_label.as_deref(), Some("cuda12.8"));
        assert_eq!(wheel.build_tag, None);

        let wheel: WheelFilename = "torch-2.9.0-cp313-cp313-macosx_11_0_arm64-null.whl"
            .parse()
            .unwrap();
        assert_eq!(wheel.variant_label.as_deref(), Some("null"));

        let wheel: WheelFilename = "numpy-2.3.2-1-cp313-cp313t-musllinux_1_2_x86_64-x86_64_v3.whl"
            .parse()
            .unwrap();
        assert_eq!(wheel.build_tag.as_ref().map(|b| b.number), Some(1));
        assert_eq!(wheel.variant_label.as_deref(), Some("x86_64_v3"));

        assert!(matches!(
            "foo-1.2.3-202206090410-py3-none-any-whoopsie-whoops.whl".parse::<WheelFilename>(),
            Err(FilenameError::ComponentCount { count: 8, .. })
        ));
    }

    #[test]
    fn splits_compressed_tag_sets_and_round_trips() {
        let text = "six-1.16.0-py2.py3-none-any.whl";
        let wheel: WheelFilename = text.parse().unwrap();
        assert_eq!(wheel.python_tags, ["py2", "py3"]);
        assert_eq!(wheel.to_string(), text);
        let text = "numpy-2.1.0-cp312-cp312-manylinux_2_17_x86_64.manylinux2014_x86_64.whl";
        let wheel: WheelFilename = text.parse().unwrap();
        assert_eq!(wheel.platform_tags.len(), 2);
        assert_eq!(wheel.to_string(), text);
    }

    #[test]
    fn rejects_garbage() {
        for bad in [
            "",
            ".whl",
            "torch.whl",
            "torch-2.9.0.whl",
            "torch-notaversion-cp310-cp310-any.whl",
            "-2.9.0-py3-none-any.whl",
            "torch-2.9.0-py3--any.whl",
            "torch-2.9.0-py3-none-any-UPPER.whl",
            "torch-2.9.0-1-py3-none-any-Bad.whl",
            "torch-2.9.0-1x!-py3-none-any.whl",
        ] {
            assert!(bad.parse::<WheelFilename>().is_err(), "{bad}");
        }
        assert!(matches!(
            "torch-2.9.0.exe".parse::<DistFilename>(),
            Err(FilenameError::UnknownExtension(_))
        ));
    }

    #[test]
    fn parses_sdists() {
        let sdist: SdistFilename = "torch-2.9.0.tar.gz".parse().unwrap();
        assert_eq!(
            (sdist.name.as_str(), sdist.version.to_string().as_str()),
            ("torch", "2.9.0")
        );
        let sdist: SdistFilename = "python-dateutil-2.8.2.tar.gz".parse().unwrap();
        assert_eq!(sdist.name, "python-dateutil");
        assert_eq!(sdist.extension, SdistExtension::TarGz);
        assert!("noversion.tar.gz".parse::<SdistFilename>().is_err());
        assert_eq!(
            "Foo-1.0.zip".parse::<SdistFilename>().unwrap().extension,
            SdistExtension::Zip
        );
    }

    #[test]
    fn borrows_only_names_normalized_already() {
        for name in [
            "torch",
            "torch-vision",
            "Torch",
            "torch_vision",
            "a.-_b",
            "-torch",
            "torch-",
            "tor--ch",
            "",
            "-",
            "_",
            "nvidia-cublas-cu12",
            "ÄBC",
            "äbc",
            "x.y",
            "a-b-c",
        ] {
            let normalized = normalized_name(name);
            assert_eq!(normalized, normalize_name(name), "{name:?}");
            assert_eq!(
                matches!(normalized, std::borrow::Cow::Borrowed(_)),
                normalize_name(name) == name,
                "{name:?}"
            );
        }
    }

    #[test]
    fn normalizes_names() {
        assert_eq!(normalize_name("Torch_Vision"), "torch-vision");
        assert_eq!(normalize_name("a.-_b"), "a-b");
        assert_eq!(normalize_name("pytorch-triton-rocm"), "pytorch-triton-rocm");
    }
}
