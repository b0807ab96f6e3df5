//! The candidates of one project in one environment: the versions with files for its Python,
//! platform and build (the mirror's own [`select_files_with_variants`], so PyTorch projects get exactly the
//! build the server would serve that environment's machine or backend), yanked ones marked,
//! pre-releases only where a declared requirement names one.

use std::collections::{BTreeMap, BTreeSet};

use pep440_rs::{Version, VersionSpecifier, VersionSpecifiers};
use wheelgate_resolver::filename::DistFilename;
use wheelgate_resolver::index::{IndexFile, ProjectPage};

use super::bind::Binding;
use super::config::{MirrorConfig, PackageEntry};
use super::environment::{Build, Environment};
use super::select::select_files_with_variants;
use super::solver::Candidate;
use super::variants::{VariantsFiles, variants_json_version};

/// The versions of `project` with files for the environment, and those files: the mirror's
/// selection for one Python, one platform and the environment's build; yanked versions marked.
pub(super) fn candidates(
    config: &MirrorConfig,
    environment: &Environment,
    project: &str,
    page: &ProjectPage,
    variants: Option<&VariantsFiles>,
    binding: Option<&Binding>,
) -> (BTreeMap<Version, Candidate>, BTreeMap<Version, Vec<usize>>) {
    let catalog = &*config.catalog;
    let kind = config.sources().kind(project);
    let mut entry = PackageEntry {
        name: project.to_string(),
        project: project.to_string(),
        kind,
        versions: Some(VersionSpecifiers::empty()),
        backends: Vec::new(),
        machines: Vec::new(),
        // On a variant index, the environment's machine gets its variant and its backend the
        // variant of that label (`cu130` is `cuda13.0`).
        variant_labels: Vec::new(),
        policy: config.policy.clone(),
        python: vec![environment.python],
        platforms: vec![environment.platform],
        dependencies: true,
        extras: Vec::new(),
    };
    match &environment.build {
        Build::Backend(backend) => entry.backends.push(backend.clone()),
        // The machine on this environment's platform, so its files are this platform's.
        Build::Machine { machine, .. } => {
            entry.machines.push(machine.elsewhere(environment.platform));
        }
        Build::None => {}
    }
    let mut versions = BTreeMap::new();
    let mut files: BTreeMap<Version, Vec<usize>> = BTreeMap::new();
    let selection = select_files_with_variants(catalog, &entry, page, variants, binding);
    for &index in &selection.files {
        // A version's `*-variants.json` goes with its wheels, so the store holds it.
        let file = &page.files[index];
        if let Some(version) =
            public_version(file).or_else(|| variants_json_version(project, &file.filename))
        {
            versions.insert(version.clone(), Candidate { yanked: false });
            files.entry(version).or_default().push(index);
        }
    }
    // Pre-releases only where a declared requirement names one (PEP 440: `==2.10.0rc1`).
    let declared = config.packages.iter().filter(|p| p.project == project);
    for specifiers in declared.filter_map(|p| p.versions.as_ref()) {
        if !specifiers.iter().any(VersionSpecifier::any_prerelease) {
            continue;
        }
        entry.versions = Some(specifiers.clone());
        for index in select_files_with_variants(catalog, &entry, page, variants, binding).files {
            if let Some(version) = public_version(&page.files[index])
                && version.any_prerelease()
            {
                versions.insert(version.clone(), Candidate { yanked: false });
                files.entry(version).or_default().push(index);
            }
        }
    }
    // Versions whose only files are yanked: selected only when pinned, as `==` pins select.
    let yanked: BTreeSet<Version> = page
        .files
        .iter()
        .filter(|f| f.is_yanked())
        .filter_map(public_version)
        .filter(|v| !versions.contains_key(v))
        .collect();
    for version in yanked {
        entry.versions = format!("=={version}").parse().ok();
        let selection = select_files_with_variants(catalog, &entry, page, variants, binding);
        if !selection.files.is_empty() {
            versions.insert(version.clone(), Candidate { yanked: true });
            files.insert(version, selection.files);
        }
    }
    (versions, files)
}

pub(super) fn public_version(file: &IndexFile) -> Option<Version> {
    let dist: DistFilename = file.filename.parse().ok()?;
    Some(dist.version().clone().without_local())
}

pub(super) fn is_wheel(filename: &str) -> bool {
    std::path::Path::new(filename)
        .extension()
        .is_some_and(|ext| ext.eq_ignore_ascii_case("whl"))
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use wheelgate_resolver::index::parse_project_html;

    use super::*;

    /// download.pytorch.org's `/whl/cu130/torch/` as captured in `shared/fixtures`, or `None`
    /// (after saying so) where the shared fixtures are not checked out beside the workspace.
    fn real_cu130_torch_page() -> Option<ProjectPage> {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../../shared/fixtures/pytorch-index/whl_cu130_torch.html"
        );
        let Ok(html) = std::fs::read_to_string(path) else {
            println!("NOT RUN: fixture `{path}` is not readable");
            return None;
        };
        Some(parse_project_html(&html).unwrap())
    }

    fn files_of(
        page: &ProjectPage,
        python: &str,
        platform: &str,
        backend: &str,
        version: &str,
    ) -> (usize, Vec<String>) {
        let config = MirrorConfig::parse(
            "python = [\"3.12\"]\n[[package]]\nname = \"six\"\n",
            Path::new("mirror.toml"),
        )
        .unwrap();
        let environment = Environment::new(
            python.parse().unwrap(),
            platform.parse().unwrap(),
            Build::Backend(backend.parse().unwrap()),
        );
        let (versions, files) = candidates(&config, &environment, "torch", page, None, None);
        let names = files
            .get(&version.parse::<Version>().unwrap())
            .map(|indices| {
                indices
                    .iter()
                    .map(|&i| page.files[i].filename.clone())
                    .collect()
            })
            .unwrap_or_default();
        (versions.len(), names)
    }

    #[test]
    fn each_environment_gets_exactly_its_wheel_of_the_real_page() {
        let Some(page) = real_cu130_torch_page() else {
            return;
        };
        let (count, files) = files_of(&page, "3.12", "linux-x86_64", "cu130", "2.9.0");
        assert!(count >= 4, "2.9.0, 2.9.1, 2.10.0, 2.11.0 at least: {count}");
        assert_eq!(
            files,
            ["torch-2.9.0+cu130-cp312-cp312-manylinux_2_28_x86_64.whl"]
        );
        let (_, files) = files_of(&page, "3.13t", "linux-aarch64", "cu130", "2.9.0");
        assert_eq!(
            files,
            ["torch-2.9.0+cu130-cp313-cp313t-manylinux_2_28_aarch64.whl"]
        );
        let (_, files) = files_of(&page, "3.10", "windows-x86_64", "cu130", "2.9.0");
        assert_eq!(files, ["torch-2.9.0+cu130-cp310-cp310-win_amd64.whl"]);
        // The CPU build is not on this page: no version at all for a cpu environment.
        let (count, _) = files_of(&page, "3.12", "linux-x86_64", "cpu", "2.9.0");
        assert_eq!(count, 0);
    }
}
