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

use pep440_rs::Version;

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

/// The aliases of one version whose kept files are `kept` (index and filename).
pub fn version_aliases<'a>(kept: impl Iterator<Item = (usize, &'a str)>) -> Vec<PlainAlias> {
    let wheels: Vec<KeptWheel<'a>> = kept
        .filter_map(|(index, filename)| KeptWheel::read(index, filename))
        .collect();
    let Some(lead) = wheels.iter().map(|w| &w.version).max() else {
        return Vec::new();
    };
    // Platforms an installer taking the lead, or the plain version, already finds.
    let covered: Vec<Platform> = wheels
        .iter()
        .filter(|w| &w.version == lead || w.label().is_none())
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
        let plain = wheel.version.clone().without_local().to_string();
        aliases.push(PlainAlias {
            index: wheel.index,
            label,
            filename: format!(
                "{}-{plain}-{}",
                wheel.parts.name,
                wheel.rest_after_version()
            ),
            version: plain,
        });
    }
    aliases
}

/// A kept wheel, read for [`plain_aliases`].
struct KeptWheel<'a> {
    index: usize,
    filename: &'a str,
    parts: WheelParts<'a>,
    version: Version,
    platform: Option<Platform>,
}

impl<'a> KeptWheel<'a> {
    /// `None` for what is not a plain (non-variant) wheel with a readable version.
    fn read(index: usize, filename: &'a str) -> Option<Self> {
        let parts = WheelParts::split(filename).ok()?;
        if parts.variant_label.is_some() {
            return None;
        }
        Some(KeptWheel {
            index,
            filename,
            version: parts.version.parse().ok()?,
            platform: wheel_platform(parts.platform),
            parts,
        })
    }

    /// The local label as written in the filename (`cpu`, `rocm6.4`).
    fn label(&self) -> Option<String> {
        self.parts
            .version
            .split_once('+')
            .map(|(_, label)| label.to_string())
    }

    /// The filename after `<name>-<version>-`.
    fn rest_after_version(&self) -> &'a str {
        let prefix = self.parts.name.len() + 1 + self.parts.version.len() + 1;
        &self.filename[prefix..]
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
