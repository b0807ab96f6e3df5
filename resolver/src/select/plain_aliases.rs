//! Each platform's build under the plain version, for universal locks.
//!
//! A per-machine page keeps, per version, one build per platform, and on PyTorch's indexes the
//! builds carry local labels that differ by platform: for an MI300X, `2.9.0+rocm6.4` on Linux
//! x86_64 and `2.9.0+cpu` on Linux aarch64 and Windows. A lock that covers every platform takes
//! one version per fork of its resolution:
//!
//! - uv takes the highest version, the *lead* (`2.9.0+rocm6.4`, since a local label sorts
//!   above none), and forks only where the plain version (`2.9.0`) has a wheel for a platform
//!   the lead lacks (uv's "backtrack to non-local versions when wheels are missing platform
//!   support"). A `2.9.0+cpu` wheel is not considered, so Linux aarch64 and Windows are left
//!   without torch.
//! - So the page also lists each such platform's build under the plain version: the same wheel
//!   with its version renamed (a derived wheel, `wheelgate_files::derive`), which uv's rule then
//!   finds. The lead's own platforms need nothing, nor does a platform whose build is
//!   unlabelled already.
//!
//! The aliases change no choice: each is a file the page keeps, under a second name.

use super::PageSelection;
use super::group::wheel_platform;
use crate::filename::WheelParts;
use crate::machine::Platform;

/// A kept wheel that the page also lists under its plain version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlainAlias {
    /// The kept file's index on the page the selection was made from.
    pub index: usize,
    /// Its local label (`cpu`), which the alias's link carries so the upstream name can be
    /// made again from the plain one.
    pub label: String,
    /// Its version without the label (`2.9.0`).
    pub version: String,
    /// Its filename with the label dropped
    /// (`torch-2.9.0-cp312-cp312-manylinux_2_28_aarch64.whl`).
    pub filename: String,
}

/// The aliases a page needs for `selection`, whose files' names `filename` gives by index: per
/// version, every kept labelled wheel built for a platform that neither the version's lead (its
/// highest kept version) nor an unlabelled kept wheel covers. Variant wheels (PEP 825) are left
/// to variant-aware installers.
pub fn plain_aliases<'a>(
    selection: &PageSelection,
    filename: impl Fn(usize) -> &'a str,
) -> Vec<PlainAlias> {
    selection
        .versions
        .iter()
        .flat_map(|version| {
            version_aliases(version.kept.iter().map(|&index| (index, filename(index))))
        })
        .collect()
}

/// The aliases of one version whose kept files are `kept` (index and filename): all of one
/// public version, so only their local labels are compared, never a version parsed (a page's
/// kept files are hundreds, and this runs for every rendering).
pub fn version_aliases<'a>(
    kept: impl Iterator<Item = (usize, &'a str)> + Clone,
) -> Vec<PlainAlias> {
    // Most versions keep one label on every platform but macOS, whose wheels have none: told
    // by a glance at each name (the version is a wheel name's second field, PEP 427 escaping
    // any `-` of the project's name), before any name is split and checked.
    let mut labels = kept.clone().filter_map(|(_, filename)| {
        let (dashes, count) = dashes(filename);
        let version = filename
            .get(dashes[0] + 1..dashes[1])
            .filter(|_| count >= 2)?;
        version.split_once('+').map(|(_, label)| label)
    });
    let first = labels.next();
    if labels.all(|label| Some(label) == first) {
        return Vec::new();
    }
    let wheels: Vec<KeptWheel<'a>> = kept
        .filter_map(|(index, filename)| KeptWheel::read(index, filename))
        .collect();
    let Some(lead) = wheels
        .iter()
        .map(KeptWheel::label)
        .max_by(|a, b| compare_labels(*a, *b))
    else {
        return Vec::new();
    };
    // One build on every platform (or none labelled): nothing for uv to miss.
    if wheels.iter().all(|w| w.label() == lead) || lead.is_none() {
        return Vec::new();
    }
    // Platforms an installer taking the lead, or the plain version, already finds.
    let covered: Vec<Platform> = wheels
        .iter()
        .filter(|w| compare_labels(w.label(), lead).is_eq() || w.label().is_none())
        .filter_map(|w| w.platform)
        .collect();
    let mut aliases = Vec::new();
    for wheel in &wheels {
        let (Some(label), Some(platform)) = (wheel.label(), wheel.platform) else {
            continue;
        };
        if covered.contains(&platform) {
            continue;
        }
        let plain = wheel.public_version();
        aliases.push(PlainAlias {
            index: wheel.index,
            label: label.to_string(),
            filename: format!("{}-{plain}-{}", wheel.name, wheel.rest_after_version()),
            version: plain.to_string(),
        });
    }
    aliases
}

/// PEP 440's order of local labels (`None`: no label, below every label): segment by segment
/// (split at `.`), a numeric one above a lexical one, numbers by value, words without regard
/// to case; a label that runs on past another's last segment above it.
fn compare_labels(a: Option<&str>, b: Option<&str>) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    let (a, b) = match (a, b) {
        (None, None) => return Ordering::Equal,
        (None, Some(_)) => return Ordering::Less,
        (Some(_), None) => return Ordering::Greater,
        // The common case: one spelling.
        (Some(a), Some(b)) if a == b => return Ordering::Equal,
        (Some(a), Some(b)) => (a, b),
    };
    let mut a_segments = a.split(['.', '-', '_']);
    let mut b_segments = b.split(['.', '-', '_']);
    loop {
        let (x, y) = match (a_segments.next(), b_segments.next()) {
            (None, None) => return Ordering::Equal,
            (None, Some(_)) => return Ordering::Less,
            (Some(_), None) => return Ordering::Greater,
            (Some(x), Some(y)) => (x, y),
        };
        let numeric = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
        let order = match (numeric(x), numeric(y)) {
            (true, true) => {
                let (x, y) = (x.trim_start_matches('0'), y.trim_start_matches('0'));
                x.len().cmp(&y.len()).then_with(|| x.cmp(y))
            }
            (true, false) => Ordering::Greater,
            (false, true) => Ordering::Less,
            (false, false) => x
                .bytes()
                .map(|b| b.to_ascii_lowercase())
                .cmp(y.bytes().map(|b| b.to_ascii_lowercase())),
        };
        if order.is_ne() {
            return order;
        }
    }
}

/// Where the first five `-` of `text` are, and how many it has (counted up to six): a byte
/// scan, for the hundreds of kept names a rendering reads.
fn dashes(text: &str) -> ([usize; 5], usize) {
    let mut at = [0; 5];
    let mut count = 0;
    for (position, &byte) in text.as_bytes().iter().enumerate() {
        if byte == b'-' {
            if count < at.len() {
                at[count] = position;
            }
            count += 1;
            if count > at.len() {
                break;
            }
        }
    }
    (at, count)
}

/// A kept wheel, read for [`plain_aliases`].
struct KeptWheel<'a> {
    index: usize,
    filename: &'a str,
    /// The name and version as written.
    name: &'a str,
    version: &'a str,
    platform: Option<Platform>,
}

impl<'a> KeptWheel<'a> {
    /// `None` for what is not a plain (non-variant) wheel. A kept file's name was checked where
    /// the page was grouped: the common one of five fields is split here without checking it
    /// again; one with a build tag or a variant label the full way.
    fn read(index: usize, filename: &'a str) -> Option<Self> {
        let stem = filename.strip_suffix(".whl")?;
        let (dashes, count) = dashes(stem);
        let (name, version, platform) = if count == 4 {
            (
                &stem[..dashes[0]],
                &stem[dashes[0] + 1..dashes[1]],
                &stem[dashes[3] + 1..],
            )
        } else {
            let parts = WheelParts::split(filename).ok()?;
            if parts.variant_label.is_some() {
                return None;
            }
            (parts.name, parts.version, parts.platform)
        };
        Some(KeptWheel {
            index,
            filename,
            name,
            version,
            platform: wheel_platform(platform),
        })
    }

    /// The local label as written in the filename (`cpu`, `rocm6.4`).
    fn label(&self) -> Option<&'a str> {
        self.version.split_once('+').map(|(_, label)| label)
    }

    /// The version as written, without its label (`2.9.0`).
    fn public_version(&self) -> &'a str {
        self.version
            .split_once('+')
            .map_or(self.version, |(public, _)| public)
    }

    /// The filename after `<name>-<version>-`.
    fn rest_after_version(&self) -> &'a str {
        &self.filename[self.name.len() + 1 + self.version.len() + 1..]
    }
}

/// The upstream filename of `plain` (a filename [`PlainAlias::filename`] gave) with `label`:
/// `None` when `plain` is not a wheel whose version has no label, or `label` is not a local
/// label (PEP 440: ASCII letters, digits and `.`).
pub fn labelled_upstream_name(plain: &str, label: &str) -> Option<String> {
    let valid_label = !label.is_empty()
        && label.split('.').all(|segment| {
            !segment.is_empty() && segment.bytes().all(|b| b.is_ascii_alphanumeric())
        });
    let parts = WheelParts::split(plain).ok()?;
    if !valid_label || parts.version.contains('+') || parts.variant_label.is_some() {
        return None;
    }
    let prefix = parts.name.len() + 1 + parts.version.len();
    let upstream = format!("{}+{label}{}", &plain[..prefix], &plain[prefix..]);
    // The name must read back as the same wheel with the label.
    let back = WheelParts::split(&upstream).ok()?;
    (back.version == format!("{}+{label}", parts.version)).then_some(upstream)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::select::VersionSelection;

    fn selection(kept: &[usize]) -> PageSelection {
        PageSelection {
            project: "torch".to_string(),
            versions: vec![VersionSelection {
                version: "2.9.0".parse().unwrap(),
                decision: None,
                kept: kept.to_vec(),
                platforms: Vec::new(),
            }],
            dropped: Vec::new(),
        }
    }

    const FILES: [&str; 6] = [
        "torch-2.9.0+rocm6.4-cp312-cp312-manylinux_2_28_x86_64.whl",
        "torch-2.9.0+cpu-cp312-cp312-manylinux_2_28_aarch64.whl",
        "torch-2.9.0+cpu-cp312-cp312-win_amd64.whl",
        "torch-2.9.0-cp312-none-macosx_11_0_arm64.whl",
        "torch-2.9.0+rocm6.4-cp313-cp313-manylinux_2_28_x86_64.whl",
        "torch-2.9.0+cpu-cp313-cp313-manylinux_2_28_aarch64.whl",
    ];

    #[test]
    fn the_platforms_the_lead_lacks_get_their_build_under_the_plain_version() {
        let aliases = plain_aliases(&selection(&[0, 1, 2, 3, 4, 5]), |i| FILES[i]);
        let names: Vec<(&str, &str)> = aliases
            .iter()
            .map(|a| (a.label.as_str(), a.filename.as_str()))
            .collect();
        assert_eq!(
            names,
            [
                ("cpu", "torch-2.9.0-cp312-cp312-manylinux_2_28_aarch64.whl"),
                ("cpu", "torch-2.9.0-cp312-cp312-win_amd64.whl"),
                ("cpu", "torch-2.9.0-cp313-cp313-manylinux_2_28_aarch64.whl"),
            ]
        );
        assert_eq!(
            aliases.iter().map(|a| a.index).collect::<Vec<_>>(),
            [1, 2, 5]
        );
        for alias in &aliases {
            assert_eq!(alias.version, "2.9.0");
            assert_eq!(
                labelled_upstream_name(&alias.filename, &alias.label).as_deref(),
                Some(FILES[alias.index])
            );
        }
    }

    #[test]
    fn one_build_everywhere_needs_no_alias() {
        let files = [
            "torch-2.9.0+cu128-cp312-cp312-manylinux_2_28_x86_64.whl",
            "torch-2.9.0+cu128-cp312-cp312-manylinux_2_28_aarch64.whl",
            "torch-2.9.0+cu128-cp312-cp312-win_amd64.whl",
            "torch-2.9.0-cp312-none-macosx_11_0_arm64.whl",
        ];
        assert!(plain_aliases(&selection(&[0, 1, 2, 3]), |i| files[i]).is_empty());
        // An unlabelled wheel for a platform covers it.
        let files = [
            "torch-2.9.0+rocm6.4-cp312-cp312-manylinux_2_28_x86_64.whl",
            "torch-2.9.0-cp312-cp312-manylinux_2_28_aarch64.whl",
        ];
        assert!(plain_aliases(&selection(&[0, 1]), |i| files[i]).is_empty());
    }

    #[test]
    fn local_labels_order_as_pep_440_orders_them() {
        use std::cmp::Ordering::{Equal, Greater, Less};
        let cases = [
            (None, Some("cpu"), Less),
            (Some("rocm6.4"), Some("cpu"), Greater),
            (Some("cu128"), Some("cu126"), Greater),
            (Some("cu128"), Some("cu1280"), Less),
            (Some("rocm6.10"), Some("rocm6.4"), Greater),
            (Some("rocm6.4"), Some("rocm6.4.1"), Less),
            (Some("1"), Some("abc"), Greater),
            (Some("CPU"), Some("cpu"), Equal),
            (Some("cpu.01"), Some("cpu.1"), Equal),
        ];
        for (a, b, expected) in cases {
            assert_eq!(compare_labels(a, b), expected, "{a:?} vs {b:?}");
            assert_eq!(compare_labels(b, a), expected.reverse(), "{b:?} vs {a:?}");
            // As pep440_rs orders the versions.
            let version = |label: Option<&str>| {
                format!(
                    "2.9.0{}",
                    label.map(|l| format!("+{l}")).unwrap_or_default()
                )
                .parse::<pep440_rs::Version>()
                .unwrap()
            };
            assert_eq!(version(a).cmp(&version(b)), expected, "{a:?} vs {b:?}");
        }
    }

    #[test]
    fn only_a_plain_wheel_with_a_local_label_makes_an_upstream_name() {
        let plain = "torch-2.9.0-cp312-cp312-win_amd64.whl";
        assert_eq!(
            labelled_upstream_name(plain, "cu128").as_deref(),
            Some("torch-2.9.0+cu128-cp312-cp312-win_amd64.whl")
        );
        assert_eq!(
            labelled_upstream_name(plain, "rocm6.4").as_deref(),
            Some("torch-2.9.0+rocm6.4-cp312-cp312-win_amd64.whl")
        );
        for label in ["", "cu-128", "cu/128", ".cpu", "cpu..x", "cpu+x"] {
            assert_eq!(labelled_upstream_name(plain, label), None, "{label}");
        }
        assert_eq!(
            labelled_upstream_name("torch-2.9.0+cpu-cp312-cp312-win_amd64.whl", "cpu"),
            None
        );
        assert_eq!(labelled_upstream_name("torch-2.9.0.tar.gz", "cpu"), None);
    }
}
