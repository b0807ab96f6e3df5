//! Wheel variants (PEP 825) in a mirror: which variant wheels and `*-variants.json` files of a
//! page an entry takes, so that an offline server on the store serves each machine what an
//! on-line one would (pure, on the parsed page and its parsed variants files).
//!
//! - per machine: for each declared machine, the variant the server chooses for it
//!   ([`choose_variants`] with the entry's policy: the same choice, the release train's
//!   consistency included);
//! - per label: every wheel of a label in `variant_labels`, or of a label naming one of the
//!   entry's `backends` (`cu130` is `cuda13.0`, `cpu` is `null`), that runs on one of its
//!   platforms;
//! - and the `*-variants.json` of every version whose variant wheels were taken, so the
//!   offline server orders the stored variants with the same file.
//!
//! Resolution uses the same selection per environment (`candidates.rs`: the environment's
//! machine or backend takes its variant), and reads a variant wheel's core metadata with its
//! PEP 817 `variant_label` markers decided for its label (`fetch.rs`), as the server serves it.

use std::collections::{BTreeMap, BTreeSet};

use pep440_rs::Version;
use wheelgate_resolver::filename::WheelParts;
use wheelgate_resolver::platform_tags::platform_matches;
use wheelgate_resolver::select::FileRef;
use wheelgate_resolver::variants::{
    VariantsFile, choose::variant_label, choose_variants, lists_variants, variants_json_indices,
};
use wheelgate_resolver::{Backend, Catalog, Machine};

use super::config::PackageEntry;

/// A page's variants files by page index, parsed or why not (what [`choose_variants`] reads).
pub type VariantsFiles = BTreeMap<usize, Result<VariantsFile, String>>;

/// Adds to `candidates` (by public version) the variant wheels `entry` takes from `refs`.
pub(super) fn take_variants(
    catalog: &Catalog,
    entry: &PackageEntry,
    refs: &[FileRef<'_>],
    variants: &VariantsFiles,
    candidates: &mut BTreeMap<Version, BTreeSet<usize>>,
) {
    if !lists_variants(refs) {
        return;
    }
    for machine in &entry.machines {
        let choice = choose_variants(
            catalog,
            machine,
            &entry.policy,
            &entry.project,
            refs,
            variants,
        );
        for version in choice.versions {
            if !entry.wants(&version.version) {
                continue;
            }
            let runs = version
                .picks
                .iter()
                .map(|pick| pick.index)
                .filter(|&index| runs_on(machine, refs[index].filename));
            candidates.entry(version.version).or_default().extend(runs);
        }
    }
    let platforms: Vec<Machine> = entry
        .platforms
        .iter()
        .map(|platform| Machine::cpu_only(*platform))
        .collect();
    for (index, file) in refs.iter().enumerate() {
        let Some(label) = variant_label(file.filename) else {
            continue;
        };
        let by_backend = Backend::from_variant_label(label)
            .is_some_and(|backend| entry.backends.contains(&backend));
        if !by_backend && !entry.variant_labels.iter().any(|l| l == label) {
            continue;
        }
        let Some(version) = public_version(file.filename) else {
            continue;
        };
        if entry.wants(&version) && platforms.iter().any(|m| runs_on(m, file.filename)) {
            candidates.entry(version).or_default().insert(index);
        }
    }
}

/// The `*-variants.json` files of the versions among `taken` that have a variant wheel.
pub(super) fn variants_files_of(
    project: &str,
    refs: &[FileRef<'_>],
    taken: &[usize],
) -> Vec<usize> {
    let versions: BTreeSet<Version> = taken
        .iter()
        .filter(|&&index| variant_label(refs[index].filename).is_some())
        .filter_map(|&index| public_version(refs[index].filename))
        .collect();
    variants_json_indices(refs)
        .into_iter()
        .filter(|&index| {
            variants_json_version(project, refs[index].filename)
                .is_some_and(|version| versions.contains(&version))
        })
        .collect()
}

/// The public version of a wheel filename.
fn public_version(filename: &str) -> Option<Version> {
    let parts = WheelParts::split(filename).ok()?;
    parts
        .version
        .parse::<Version>()
        .ok()
        .map(Version::without_local)
}

/// The version of a `{name}-{version}-variants.json` of `project`.
pub(super) fn variants_json_version(project: &str, filename: &str) -> Option<Version> {
    let stem = filename.strip_suffix("-variants.json")?;
    let (name, version) = stem.rsplit_once('-')?;
    (wheelgate_resolver::filename::normalize_name(name) == project)
        .then(|| version.parse::<Version>().ok().map(Version::without_local))
        .flatten()
}

fn runs_on(machine: &Machine, filename: &str) -> bool {
    WheelParts::split(filename).is_ok_and(|w| platform_matches(machine, w.platform_tags()))
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use wheelgate_resolver::index::{IndexFile, ProjectPage};
    use wheelgate_resolver::variants::parse_variants_json;

    use super::*;
    use crate::config::{MirrorConfig, MirrorConfigError};
    use crate::select::{select_files, select_files_with_variants};

    const TAGS: &str = "cp312-cp312-manylinux_2_28_x86_64";
    const H100: &str = r#"{ platform = "linux-x86_64", nvidia = { driver_version = "580.65.06", gpus = [{ compute_capability = "9.0" }] } }"#;

    fn entry(lines: &str) -> PackageEntry {
        let toml = format!("dependencies = false\n[[package]]\nname = \"torch\"\n{lines}");
        MirrorConfig::parse(&toml, Path::new("mirror.toml"))
            .unwrap()
            .packages
            .remove(0)
    }

    /// torch 2.8.0 and 2.9.0 as variants (`cuda13.0`, `cuda12.8`, `null`; Linux and macOS
    /// `null`), each with its variants file, beside a plain 2.7.0 CPU wheel.
    fn page() -> (ProjectPage, VariantsFiles) {
        let variants = r#"{"$schema": "https://variants-schema.wheelnext.dev/v0.0.3.json",
            "default-priorities": {"namespace": ["nvidia"]},
            "variants": {"null": {},
              "cuda12.8": {"nvidia": {"cuda_version_lower_bound": ["12.0"], "sm_arch": ["70_real", "90_real"]}},
              "cuda13.0": {"nvidia": {"cuda_version_lower_bound": ["13.0"], "sm_arch": ["90_real"]}}}}"#;
        let mut names = vec![format!("torch-2.7.0+cpu-{TAGS}.whl")];
        for version in ["2.8.0", "2.9.0"] {
            for label in ["cuda13.0", "cuda12.8", "null"] {
                names.push(format!("torch-{version}-{TAGS}-{label}.whl"));
            }
            names.push(format!(
                "torch-{version}-cp312-none-macosx_11_0_arm64-null.whl"
            ));
            names.push(format!("torch-{version}-variants.json"));
        }
        let page = ProjectPage {
            files: names
                .iter()
                .map(|n| IndexFile::new(n.as_str(), format!("/whl/variant/{n}")))
                .collect(),
            ..ProjectPage::default()
        };
        let parsed: VariantsFiles = page
            .files
            .iter()
            .enumerate()
            .filter(|(_, f)| f.filename.ends_with("-variants.json"))
            .map(|(i, _)| (i, parse_variants_json(variants).map_err(|e| e.to_string())))
            .collect();
        (page, parsed)
    }

    fn taken(entry: &PackageEntry) -> Vec<String> {
        let (page, parsed) = page();
        let selection =
            select_files_with_variants(Catalog::embedded(), entry, &page, Some(&parsed), None);
        selection
            .files
            .iter()
            .map(|&i| page.files[i].filename.clone())
            .collect()
    }

    #[test]
    fn a_declared_machine_takes_its_variant_and_the_variants_file() {
        let entry = entry(&format!("versions = \"==2.9.0\"\nmachines = [{H100}]"));
        assert_eq!(
            taken(&entry),
            [
                format!("torch-2.9.0-{TAGS}-cuda13.0.whl"),
                "torch-2.9.0-variants.json".to_string(),
            ]
        );
    }

    #[test]
    fn labels_and_backends_take_every_wheel_of_their_label_on_the_platforms() {
        let entry = entry(
            "versions = \">=2.8\"\nbackends = [\"cu128\"]\nvariant_labels = [\"null\"]\nplatforms = [\"linux-x86_64\", \"macos-arm64\"]",
        );
        let mut expected = Vec::new();
        for version in ["2.8.0", "2.9.0"] {
            expected.extend([
                format!("torch-{version}-{TAGS}-cuda12.8.whl"),
                format!("torch-{version}-{TAGS}-null.whl"),
                format!("torch-{version}-cp312-none-macosx_11_0_arm64-null.whl"),
                format!("torch-{version}-variants.json"),
            ]);
        }
        assert_eq!(taken(&entry), expected);
    }

    #[test]
    fn without_variants_files_no_variant_is_taken() {
        // A caller that did not read the page's variants files gets its plain wheels only.
        let entry = entry(&format!("machines = [{H100}]\nvariant_labels = [\"null\"]"));
        let (page, _) = page();
        let selection = select_files(Catalog::embedded(), &entry, &page);
        let names: Vec<&str> = selection
            .files
            .iter()
            .map(|&i| page.files[i].filename.as_str())
            .collect();
        assert_eq!(names, [format!("torch-2.7.0+cpu-{TAGS}.whl")]);
    }

    #[test]
    fn a_label_outside_the_grammar_is_refused_naming_it() {
        let toml =
            "[[package]]\nname = \"torch\"\ndependencies = false\nvariant_labels = [\"CUDA-13\"]";
        let err = MirrorConfig::parse(toml, Path::new("mirror.toml")).unwrap_err();
        let MirrorConfigError::Invalid { source, .. } = &err else {
            panic!("{err}");
        };
        assert!(
            matches!(**source, MirrorConfigError::InvalidVariantLabel { .. }),
            "{err}"
        );
        assert!(source.to_string().contains("`CUDA-13`"), "{source}");
        // Labels alone are builds enough for a PyTorch project.
        let toml =
            "[[package]]\nname = \"torch\"\ndependencies = false\nvariant_labels = [\"null\"]";
        assert!(MirrorConfig::parse(toml, Path::new("mirror.toml")).is_ok());
    }
}
