//! Choosing, for one machine, the variant wheels (PEP 825) a plain installer is served: for
//! every (version, build, Python tag, ABI, platform) of a project page exactly one variant, the
//! best the machine runs, presented under the plain wheel filename (label removed).
//!
//! Plain pip and uv reject a filename with a variant label, so a variant index is invisible to
//! them; once one variant per plain filename is chosen, the page is an ordinary index again.
//!
//! The order comes from the version's `{name}-{version}-variants.json` (PEP 825 ordering,
//! [`super::order_variants`]) with two judgements beyond the bare providers, each stated in the
//! version's notes:
//!
//! - PyTorch's ROCm wheels bundle their ROCm runtime: an AMD GPU with no ROCm installed (no
//!   `amd :: rocm_version`) is taken to support every ROCm version the file lists, newest
//!   first, so its gfx target alone decides;
//! - an NVIDIA driver known only by its version supports the CUDA version of its branch
//!   ([`crate::driver_cuda`], through [`super::SupportedProperties::from_machine`]);
//! - an Intel GPU the probes found XPU-capable but whose Level Zero device IP is unknown is
//!   taken to support every `intel :: device_ip` the file lists.
//!
//! A version without a readable variants file is chosen from its labels alone: each label is
//! read as the PyTorch backend it names (`cuda12.8` is `cu128`, `null` is `cpu`) and the
//! catalog's selection rules decide, as for local-labelled wheels.

use std::collections::BTreeMap;

use pep440_rs::Version;

use crate::backend::Backend;
use crate::catalog::Catalog;
use crate::filename::{WheelParts, normalize_name};
use crate::machine::Machine;
use crate::platform_tags::platform_matches;
use crate::select::{FileRef, Offer, Policy, decide};
use crate::version::DottedVersion;

use super::consistency;
use super::contradictions::contradictions;
use super::ordering::order_variants;
use super::properties::{AMD, INTEL, SupportedProperties};
use super::schema::VariantsFile;

/// The suffix of a version's index-level variants file.
pub const VARIANTS_JSON_SUFFIX: &str = "-variants.json";

/// The variant wheel chosen for one plain filename.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VariantPick {
    /// The upstream file's index on the page.
    pub index: usize,
    /// Its variant label (`cuda13.0`).
    pub label: String,
    /// The filename served: the upstream one without its label
    /// (`torch-2.9.0-cp312-cp312-manylinux_2_28_x86_64.whl`).
    pub filename: String,
}

/// The variant choice for one version.
#[derive(Debug, Clone)]
pub struct VersionVariants {
    /// The public version.
    pub version: Version,
    /// The labels the machine may get, best first (what a plain filename falls back through
    /// when its best label has no wheel for it).
    pub order: Vec<String>,
    /// Labels the machine does not get, with the reason.
    pub rejected: Vec<(String, String)>,
    /// One pick per plain filename, by page index.
    pub picks: Vec<VariantPick>,
    /// Judgements and fallbacks an explanation must state.
    pub notes: Vec<String>,
}

/// The variant choice over a whole page.
#[derive(Debug, Clone, Default)]
pub struct VariantChoice {
    /// Versions with variant wheels, newest first.
    pub versions: Vec<VersionVariants>,
    /// Variant files not served (other labels, bad names, unknown labels), with the reason.
    pub skipped: Vec<(usize, String)>,
}

impl VariantChoice {
    /// Every pick of every version.
    pub fn picks(&self) -> impl Iterator<Item = &VariantPick> {
        self.versions.iter().flat_map(|v| v.picks.iter())
    }

    /// The pick serving the plain `filename`, if any.
    pub fn pick_for(&self, filename: &str) -> Option<&VariantPick> {
        self.picks().find(|pick| pick.filename == filename)
    }
}

/// Whether the page lists any variant file: a wheel with a variant label, or a
/// `*-variants.json`.
pub fn lists_variants(files: &[FileRef<'_>]) -> bool {
    files.iter().any(|file| is_variant_file(file.filename))
}

/// Whether `filename` is a variant file: a wheel with a variant label, or a `*-variants.json`.
pub(crate) fn is_variant_file(filename: &str) -> bool {
    filename.ends_with(VARIANTS_JSON_SUFFIX)
        || (has_six_parts(filename) && variant_label(filename).is_some())
}

/// Whether `filename` has at least six dash-separated parts, as a variant wheel's name has
/// (name, version, python, abi, platform, label): a count of dashes, where splitting and
/// validating every name of a real-size page again cost a tenth of a cold request's render.
fn has_six_parts(filename: &str) -> bool {
    memchr::memchr_iter(b'-', filename.as_bytes())
        .nth(4)
        .is_some()
}

/// The page indices of the `*-variants.json` files, which the caller fetches and parses.
pub fn variants_json_indices(files: &[FileRef<'_>]) -> Vec<usize> {
    files
        .iter()
        .enumerate()
        .filter(|(_, file)| file.filename.ends_with(VARIANTS_JSON_SUFFIX))
        .map(|(index, _)| index)
        .collect()
}

/// The variant label of a wheel filename, when it is a valid variant wheel name.
pub fn variant_label(filename: &str) -> Option<&str> {
    WheelParts::split(filename).ok()?.variant_label
}

/// `filename` without its variant label: the name a plain installer accepts. `None` when the
/// name is not a wheel or carries no label.
pub fn plain_filename(filename: &str) -> Option<String> {
    let label = variant_label(filename)?;
    let stem = filename.strip_suffix(".whl")?.strip_suffix(label)?;
    Some(format!("{}.whl", stem.strip_suffix('-')?))
}

/// The upstream name of the variant wheel served as `plain` with `label`; `None` when `plain`
/// is not a plain wheel name or `label` not a valid label.
pub fn labelled_filename(plain: &str, label: &str) -> Option<String> {
    let parts = WheelParts::split(plain).ok()?;
    if parts.variant_label.is_some() || !super::is_valid_label(label) {
        return None;
    }
    let stem = plain.strip_suffix(".whl")?;
    let labelled = format!("{stem}-{label}.whl");
    (variant_label(&labelled) == Some(label)).then_some(labelled)
}

/// The version a `{name}-{version}-variants.json` belongs to, when it names `project`.
fn variants_json_version(project: &str, filename: &str) -> Option<Version> {
    let stem = filename.strip_suffix(VARIANTS_JSON_SUFFIX)?;
    let (name, version) = stem.rsplit_once('-')?;
    if normalize_name(name) != project {
        return None;
    }
    version.parse::<Version>().ok().map(Version::without_local)
}

/// One variant wheel: page index, plain filename, label, parts.
struct VariantWheel<'a> {
    index: usize,
    plain: String,
    label: &'a str,
    parts: WheelParts<'a>,
}

/// Chooses the variant wheels of `files` for `machine`. `variants_json` holds, by page index,
/// each `*-variants.json` of the page parsed, or why it could not be read.
pub fn choose_variants(
    catalog: &Catalog,
    machine: &Machine,
    policy: &Policy,
    project: &str,
    files: &[FileRef<'_>],
    variants_json: &BTreeMap<usize, Result<VariantsFile, String>>,
) -> VariantChoice {
    let project = normalize_name(project);
    let mut choice = VariantChoice::default();
    let mut by_version: BTreeMap<Version, Vec<VariantWheel<'_>>> = BTreeMap::new();
    for (index, file) in files.iter().enumerate() {
        let Ok(parts) = WheelParts::split(file.filename) else {
            continue;
        };
        let Some(label) = parts.variant_label else {
            continue;
        };
        let Some(version) = parts.version.parse::<Version>().ok() else {
            choice
                .skipped
                .push((index, format!("`{}` is not a version", parts.version)));
            continue;
        };
        let Some(plain) = plain_filename(file.filename) else {
            continue;
        };
        by_version
            .entry(version.without_local())
            .or_default()
            .push(VariantWheel {
                index,
                plain,
                label,
                parts,
            });
    }
    let mut files_by_version: BTreeMap<Version, (usize, &Result<VariantsFile, String>)> =
        BTreeMap::new();
    for (&index, parsed) in variants_json {
        let Some(file) = files.get(index) else {
            continue;
        };
        if let Some(version) = variants_json_version(&project, file.filename) {
            files_by_version.entry(version).or_insert((index, parsed));
        } else {
            tracing::warn!(
                filename = file.filename,
                project,
                "a variants file whose name does not give a version of this project; ignored"
            );
        }
    }
    for (version, wheels) in by_version.into_iter().rev() {
        let chosen = match files_by_version.get(&version) {
            Some((index, Ok(file))) => by_variants_file(
                catalog,
                machine,
                policy,
                &project,
                &version,
                file,
                files[*index].filename,
                &wheels,
                &mut choice.skipped,
            ),
            Some((index, Err(why))) if why.starts_with(super::UNKNOWN_FORMAT) => unknown_format(
                &version,
                files[*index].filename,
                why,
                &wheels,
                &mut choice.skipped,
            ),
            Some((index, Err(why))) => {
                tracing::warn!(
                    filename = files[*index].filename,
                    error = why.as_str(),
                    "variants file unreadable; choosing by label"
                );
                let mut chosen = by_label(
                    catalog,
                    machine,
                    policy,
                    &project,
                    &version,
                    &wheels,
                    &mut choice.skipped,
                );
                let file_name = files[*index].filename;
                chosen.notes.insert(0, format!("`{file_name}` could not be read ({why}), so the variant was chosen by its label"));
                chosen
            }
            None => by_label(
                catalog,
                machine,
                policy,
                &project,
                &version,
                &wheels,
                &mut choice.skipped,
            ),
        };
        choice.versions.push(chosen);
    }
    choice.skipped.sort_by_key(|(index, _)| *index);
    choice
}

/// The choice for one version whose variants file names a format this crate does not read:
/// none of its variant wheels (PEP 825: variant wheels of an unknown format version are
/// unsupported), so its plain wheels, if any, are what the page serves.
fn unknown_format(
    version: &Version,
    file_name: &str,
    why: &str,
    wheels: &[VariantWheel<'_>],
    skipped: &mut Vec<(usize, String)>,
) -> VersionVariants {
    tracing::warn!(
        filename = file_name,
        error = why,
        "variants file in an unknown format; its variant wheels are not served"
    );
    let reason = format!("`{file_name}` is in a format this proxy does not read");
    let mut rejected: Vec<(String, String)> = Vec::new();
    for wheel in wheels {
        skipped.push((wheel.index, reason.clone()));
        if !rejected.iter().any(|(label, _)| label == wheel.label) {
            rejected.push((wheel.label.to_string(), reason.clone()));
        }
    }
    VersionVariants {
        version: version.clone(),
        order: Vec::new(),
        rejected,
        picks: Vec::new(),
        notes: vec![format!(
            "`{file_name}` was refused ({why}); PEP 825 says variant wheels of an unknown format are unsupported, so no variant wheel of {version} is served, only its plain wheels if it has any"
        )],
    }
}

/// The choice for one version with a readable variants file: PEP 825 ordering with this
/// crate's judgements, or the pinned backend's label.
#[allow(clippy::too_many_arguments)]
fn by_variants_file(
    catalog: &Catalog,
    machine: &Machine,
    policy: &Policy,
    project: &str,
    version: &Version,
    file: &VariantsFile,
    file_name: &str,
    wheels: &[VariantWheel<'_>],
    skipped: &mut Vec<(usize, String)>,
) -> VersionVariants {
    // Variants no machine could satisfy are taken out before anything is ordered, so neither
    // PEP 825 nor the release train's catalog decision can serve them.
    let (cleaned, broken) = skip_contradictory(file, file_name, wheels, skipped);
    let file = cleaned.as_ref().unwrap_or(file);
    let mut notes = Vec::new();
    let bare = SupportedProperties::from_machine(machine);
    let bundles_runtime = catalog.is_release_train_project(project);
    let supported = with_judgement(machine, &bare, file, bundles_runtime, &mut notes);
    let ordered = order_variants(file, &supported);
    let mut order: Vec<String> = ordered.labels().into_iter().map(str::to_string).collect();
    let mut rejected: Vec<(String, String)> = ordered
        .incompatible
        .iter()
        .map(|r| (r.label.clone(), r.reason.clone()))
        .collect();
    if supported != bare {
        let strict = order_variants(file, &bare);
        let strict_best = strict.best().map(|v| v.label.as_str());
        if strict_best != order.first().map(String::as_str) {
            notes.push(format!(
                "strict PEP 825 would choose `{}`; `{}` is served instead",
                strict_best.unwrap_or("nothing"),
                order.first().map_or("nothing", String::as_str)
            ));
        }
    }
    if policy.pinned.is_none()
        && let Some(train) = consistency::train_choice(
            catalog,
            machine,
            policy,
            project,
            version,
            wheels
                .iter()
                .filter(|wheel| file.properties(wheel.label).is_some())
                .map(|wheel| {
                    (
                        wheel.label,
                        platform_matches(machine, wheel.parts.platform_tags()),
                    )
                }),
            order.first().map(String::as_str),
        )
    {
        let file_says = rejected
            .iter()
            .find(|(label, _)| *label == train.label)
            .map(|(_, why)| why.clone());
        order.retain(|label| *label != train.label);
        rejected.retain(|(label, _)| *label != train.label);
        notes.extend(train.note);
        if let Some(why) = file_says {
            let minor_version = Backend::from_variant_label(&train.label).and_then(|backend| {
                let release = catalog.train_release(project, version).release;
                crate::select::minor_version_compatibility(
                    machine,
                    &catalog.backend_rules(release, &backend, machine.platform),
                )
            });
            notes.push(consistency::override_note(
                &train.label,
                &why,
                machine,
                minor_version.as_deref(),
            ));
        }
        order.insert(0, train.label);
    }
    if let Some(pinned) = &policy.pinned {
        (order, rejected) = pinned_only(pinned, file, &mut notes);
    }
    rejected.extend(broken.into_iter().map(|(label, why)| {
        (
            label,
            format!("its properties contradict each other: {why}"),
        )
    }));
    skip_unlisted(file, file_name, wheels, skipped);
    let picks = pick(&order, wheels, skipped);
    VersionVariants {
        version: version.clone(),
        order,
        rejected,
        picks,
        notes,
    }
}

/// `file` without the variants whose properties contradict each other (`None` when there are
/// none), and those variants with why; their wheels go to `skipped`.
fn skip_contradictory(
    file: &VariantsFile,
    file_name: &str,
    wheels: &[VariantWheel<'_>],
    skipped: &mut Vec<(usize, String)>,
) -> (Option<VariantsFile>, Vec<(String, String)>) {
    let broken = contradictions(file);
    if broken.is_empty() {
        return (None, broken);
    }
    for wheel in wheels {
        if let Some((_, why)) = broken.iter().find(|(label, _)| label == wheel.label) {
            tracing::warn!(
                label = wheel.label,
                variants_file = file_name,
                why = why.as_str(),
                "a variant whose properties contradict each other; skipped"
            );
            skipped.push((
                wheel.index,
                format!(
                    "the properties of `{}` in `{file_name}` contradict each other: {why}",
                    wheel.label
                ),
            ));
        }
    }
    let mut cleaned = file.clone();
    cleaned
        .variants
        .retain(|label, _| !broken.iter().any(|(b, _)| b == label));
    (Some(cleaned), broken)
}

/// The order and rejections of a route pinned to `pinned`: its labels only.
fn pinned_only(
    pinned: &Backend,
    file: &VariantsFile,
    notes: &mut Vec<String>,
) -> (Vec<String>, Vec<(String, String)>) {
    let (kept, others): (Vec<String>, Vec<String>) = file
        .labels()
        .map(str::to_string)
        .partition(|label| Backend::from_variant_label(label).as_ref() == Some(pinned));
    notes.push(format!(
        "pinned to {pinned}: only {} is served, whatever the machine supports",
        if kept.is_empty() {
            "a variant of that backend (this version has none)".to_string()
        } else {
            kept.iter()
                .map(|l| format!("`{l}`"))
                .collect::<Vec<_>>()
                .join(", ")
        }
    ));
    let rejected = others
        .into_iter()
        .map(|label| (label, format!("the route pins {pinned}")))
        .collect();
    (kept, rejected)
}

/// Sends to `skipped` the wheels whose label `file` does not list (and were not skipped
/// already); logs the labels it lists that no wheel has.
fn skip_unlisted(
    file: &VariantsFile,
    file_name: &str,
    wheels: &[VariantWheel<'_>],
    skipped: &mut Vec<(usize, String)>,
) {
    for wheel in wheels {
        if file.properties(wheel.label).is_none()
            && !skipped.iter().any(|(index, _)| *index == wheel.index)
        {
            tracing::warn!(
                label = wheel.label,
                variants_file = file_name,
                "a variant wheel whose label its variants file does not list; skipped"
            );
            skipped.push((
                wheel.index,
                format!("its label `{}` is not listed in `{file_name}`", wheel.label),
            ));
        }
    }
    for label in file.labels() {
        if !wheels.iter().any(|w| w.label == label) {
            tracing::debug!(
                label,
                variants_file = file_name,
                "a listed variant has no wheel"
            );
        }
    }
}

/// The machine's properties with this crate's judgement added where the providers fall short
/// (see the module documentation).
fn with_judgement(
    machine: &Machine,
    bare: &SupportedProperties,
    file: &VariantsFile,
    bundles_runtime: bool,
    notes: &mut Vec<String>,
) -> SupportedProperties {
    let mut supported = bare.clone();
    if let Some(nvidia) = &machine.nvidia
        && nvidia.cuda_version.is_none()
        && let Some(driver) = &nvidia.driver_version
        && let Some(feature) = bare.feature(super::properties::NVIDIA, "cuda_version_lower_bound")
    {
        let cuda = feature.values.first().map_or("none", String::as_str);
        notes.push(
            if bare
                .feature(super::properties::NVIDIA, "cuda_version_upper_bound")
                .is_some()
            {
                format!(
                    "the machine's CUDA version is known only from its driver {driver}: CUDA {cuda}, its branch's own (NVIDIA's table of driver branches), as nvidia-smi and the NVIDIA provider report it"
                )
            } else {
                format!(
                    "the machine's CUDA version is known only from its driver {driver}: CUDA {cuda} at least, since the driver is newer than every branch of NVIDIA's table this proxy knows"
                )
            },
        );
    }
    let has_gfx = bare
        .values(AMD, "gfx_arch")
        .is_some_and(|values| !values.is_empty());
    if bundles_runtime && has_gfx && bare.values(AMD, "rocm_version").is_none() {
        let mut versions: Vec<&String> = file
            .variants
            .values()
            .filter_map(|properties| properties.get(AMD)?.get("rocm_version"))
            .flatten()
            .collect();
        versions.sort_by(|a, b| {
            let parse = |v: &str| v.parse::<DottedVersion>().ok();
            parse(b).cmp(&parse(a)).then_with(|| b.cmp(a))
        });
        versions.dedup();
        if !versions.is_empty() {
            let values: Vec<String> = versions.into_iter().cloned().collect();
            notes.push(format!(
                "the machine has no ROCm installed, but PyTorch's ROCm wheels bundle their ROCm runtime: ROCm {} taken as supported, newest first, so the GPU's gfx target decides",
                values.join(", ")
            ));
            supported.push(
                AMD,
                "rocm_version",
                values,
                "PyTorch's ROCm wheels bundle their ROCm runtime",
            );
        }
    }
    let xpu_capable = machine
        .intel
        .as_ref()
        .is_some_and(|intel| intel.gpus.iter().any(|gpu| gpu.xpu_capable));
    if bundles_runtime && xpu_capable && bare.values(INTEL, "device_ip").is_none() {
        let mut ips: Vec<String> = file
            .variants
            .values()
            .filter_map(|properties| properties.get(INTEL)?.get("device_ip"))
            .flatten()
            .cloned()
            .collect();
        ips.sort();
        ips.dedup();
        if !ips.is_empty() {
            notes.push(
                "the machine's Intel GPU runs PyTorch's XPU builds but reports no device IP version: every device IP the variants file lists taken as supported".to_string(),
            );
            supported.push(
                INTEL,
                "device_ip",
                ips,
                "the machine's Intel GPU runs PyTorch's XPU builds",
            );
        }
    }
    supported
}

/// The choice for one version without a variants file: labels read as backends, decided by
/// the catalog's selection rules.
fn by_label(
    catalog: &Catalog,
    machine: &Machine,
    policy: &Policy,
    project: &str,
    version: &Version,
    wheels: &[VariantWheel<'_>],
    skipped: &mut Vec<(usize, String)>,
) -> VersionVariants {
    let mut offers: BTreeMap<Backend, bool> = BTreeMap::new();
    let mut backends: BTreeMap<&str, Backend> = BTreeMap::new();
    for wheel in wheels {
        if let Some(backend) = Backend::from_variant_label(wheel.label) {
            let here = platform_matches(machine, wheel.parts.platform_tags());
            *offers.entry(backend.clone()).or_default() |= here;
            backends.insert(wheel.label, backend);
        } else {
            tracing::warn!(
                label = wheel.label,
                "a variant label that names no PyTorch build, with no variants file to describe it; skipped"
            );
            skipped.push((
                wheel.index,
                format!(
                    "its label `{}` names no build and no variants file describes it",
                    wheel.label
                ),
            ));
        }
    }
    let offers: Vec<Offer> = offers
        .into_iter()
        .map(|(backend, has_platform_file)| Offer {
            backend,
            has_platform_file,
        })
        .collect();
    let train = catalog.train_release(project, version);
    let decision = decide(catalog, machine, policy, train.release, &offers);
    let mut notes =
        vec!["no variants file: each label read as the PyTorch build it names".to_string()];
    notes.extend(decision.notes.iter().cloned());
    let order: Vec<String> = backends
        .iter()
        .filter(|(_, backend)| Some(*backend) == decision.chosen.as_ref())
        .map(|(label, _)| (*label).to_string())
        .collect();
    let rejected = decision
        .rejections()
        .flat_map(|(backend, rejection)| {
            backends
                .iter()
                .filter(move |(_, b)| *b == backend)
                .map(move |(label, _)| ((*label).to_string(), rejection.to_string()))
        })
        .collect();
    let picks = pick(&order, wheels, skipped);
    VersionVariants {
        version: version.clone(),
        order,
        rejected,
        picks,
        notes,
    }
}

/// For every plain filename, the wheel of the first label in `order` that has one; the other
/// wheels go to `skipped`.
fn pick(
    order: &[String],
    wheels: &[VariantWheel<'_>],
    skipped: &mut Vec<(usize, String)>,
) -> Vec<VariantPick> {
    let mut by_plain: BTreeMap<&str, Vec<&VariantWheel<'_>>> = BTreeMap::new();
    for wheel in wheels {
        by_plain.entry(&wheel.plain).or_default().push(wheel);
    }
    let mut picks = Vec::new();
    for (plain, candidates) in by_plain {
        let best = order
            .iter()
            .find_map(|label| candidates.iter().find(|w| w.label == label));
        for wheel in &candidates {
            if best.is_some_and(|b| b.index == wheel.index) {
                continue;
            }
            if skipped.iter().any(|(index, _)| *index == wheel.index) {
                continue;
            }
            let why = match best {
                Some(best) => format!("`{}` was chosen for `{plain}`", best.label),
                None => format!("no variant of `{plain}` fits this machine"),
            };
            skipped.push((wheel.index, why));
        }
        if let Some(best) = best {
            picks.push(VariantPick {
                index: best.index,
                label: best.label.to_string(),
                filename: plain.to_string(),
            });
        }
    }
    picks.sort_by_key(|p| p.index);
    picks
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::variants::parse_variants_json;

    const TAGS: &str = "cp312-cp312-manylinux_2_28_x86_64";
    const LABELS_29: [&str; 7] = [
        "cuda12.6", "cuda12.8", "cuda13.0", "rocm6.3", "rocm6.4", "xpu", "null",
    ];

    fn machine(json: &str) -> Machine {
        serde_json::from_str(json).unwrap()
    }

    /// A page listing `names`, each linked by its own name.
    fn refs_of<S: AsRef<str>>(names: &[S]) -> Vec<FileRef<'_>> {
        names
            .iter()
            .map(|name| FileRef {
                filename: name.as_ref(),
                url: name.as_ref(),
            })
            .collect()
    }

    #[test]
    fn a_page_lists_variants_by_a_labelled_wheel_or_a_variants_file() {
        let lists = |names: &[&str]| lists_variants(&refs_of(names));
        let plain = format!("torch-2.9.0+cu128-{TAGS}.whl");
        // Six parts with a build tag, not a label: not a variant.
        let build_tagged = format!("torch-2.9.0-1-{TAGS}.whl");
        let labelled = format!("torch-2.9.0-{TAGS}-cuda12.8.whl");
        let both = format!("torch-2.9.0-1-{TAGS}-cuda12.8.whl");
        assert!(!lists(&[&plain, &build_tagged, "torch-2.9.0.tar.gz"]));
        assert!(lists(&[&plain, &labelled]));
        assert!(lists(&[&both]));
        assert!(lists(&[&plain, "torch-2.9.0-variants.json"]));
        // Seven dashes of garbage are not a label.
        assert!(!lists(&["a-b-c-d-e-f-g-h.whl"]));
    }

    /// A torch 2.9.0 page: one wheel per label, plus the variants file (last).
    fn page(labels: &[&str]) -> Vec<(String, String)> {
        let mut names: Vec<String> = labels
            .iter()
            .map(|label| format!("torch-2.9.0-{TAGS}-{label}.whl"))
            .collect();
        names.push(format!(
            "torch-2.9.0-{}-null.whl",
            "cp312-none-macosx_11_0_arm64"
        ));
        names.push("torch-2.9.0-variants.json".to_string());
        names
            .into_iter()
            .map(|name| (name.clone(), format!("/whl/variant/{name}")))
            .collect()
    }

    fn choose(machine_json: &str, policy: &Policy, with_file: bool) -> Option<VariantChoice> {
        let text = crate::variants::fixture("torch-2.9.0-variants.json")?;
        let page = page(&LABELS_29);
        let refs: Vec<FileRef<'_>> = page
            .iter()
            .map(|(filename, url)| FileRef { filename, url })
            .collect();
        let mut parsed = BTreeMap::new();
        if with_file {
            parsed.insert(
                refs.len() - 1,
                parse_variants_json(&text).map_err(|e| e.to_string()),
            );
        }
        Some(choose_variants(
            Catalog::embedded(),
            &machine(machine_json),
            policy,
            "torch",
            &refs,
            &parsed,
        ))
    }

    fn linux_label(choice: &VariantChoice) -> Option<&str> {
        choice
            .pick_for(&format!("torch-2.9.0-{TAGS}.whl"))
            .map(|p| p.label.as_str())
    }

    const H100: &str = r#"{"platform":"linux-x86_64","nvidia":{"driver_version":"580.65.06","gpus":[{"compute_capability":"9.0"}]}}"#;
    const V100: &str = r#"{"platform":"linux-x86_64","nvidia":{"driver_version":"580.65.06","gpus":[{"compute_capability":"7.0"}]}}"#;
    const GTX1080: &str = r#"{"platform":"linux-x86_64","nvidia":{"driver_version":"580.65.06","gpus":[{"compute_capability":"6.1"}]}}"#;
    const RTX5090: &str = r#"{"platform":"linux-x86_64","nvidia":{"driver_version":"570.86.10","gpus":[{"compute_capability":"12.0"}]}}"#;
    const MI300X: &str = r#"{"platform":"linux-x86_64","amd":{"gpus":[{"name":"AMD Instinct MI300X","gfx":"gfx942"}]}}"#;
    const CPU: &str = r#"{"platform":"linux-x86_64"}"#;
    const ARC_B580_NO_IP: &str =
        r#"{"platform":"linux-x86_64","intel":{"gpus":[{"pci_device":57867,"xpu_capable":true}]}}"#;
    const ARC_A770: &str = r#"{"platform":"linux-x86_64","intel":{"gpus":[{"pci_device":22176,"device_ip":"12.55.8","xpu_capable":true}]}}"#;
    const IRIS_XE: &str =
        r#"{"platform":"linux-x86_64","intel":{"gpus":[{"pci_device":39497,"integrated":true}]}}"#;

    #[test]
    fn each_machine_gets_its_variant_from_the_variants_file() {
        for (json, expected) in [
            (H100, "cuda13.0"),
            (V100, "cuda12.8"),
            (GTX1080, "cuda12.6"),
            (RTX5090, "cuda12.8"),
            (MI300X, "rocm6.4"),
            (CPU, "null"),
            (ARC_A770, "xpu"),
            (ARC_B580_NO_IP, "xpu"),
            (IRIS_XE, "null"),
        ] {
            let Some(choice) = choose(json, &Policy::default(), true) else {
                return;
            };
            assert_eq!(linux_label(&choice), Some(expected), "{json}");
            // The macOS wheel has only `null`: it is kept for every machine.
            assert_eq!(
                choice
                    .pick_for("torch-2.9.0-cp312-none-macosx_11_0_arm64.whl")
                    .map(|p| p.label.as_str()),
                Some("null")
            );
            // Exactly one pick per plain filename, every other variant skipped with a reason.
            assert_eq!(choice.picks().count(), 2);
            assert_eq!(choice.skipped.len(), LABELS_29.len() - 1);
        }
    }

    /// The label chosen for `machine_json` among one wheel per label of `fixture`'s release.
    fn label_for(
        project: &str,
        version: &str,
        fixture: &str,
        machine_json: &str,
    ) -> Option<String> {
        let text = crate::variants::fixture(fixture)?;
        let file = parse_variants_json(&text).unwrap();
        let mut names: Vec<String> = file
            .labels()
            .map(|label| format!("{project}-{version}-{TAGS}-{label}.whl"))
            .collect();
        names.push(format!("{project}-{version}-variants.json"));
        let refs = refs_of(&names);
        let parsed = BTreeMap::from([(refs.len() - 1, Ok(file))]);
        let choice = choose_variants(
            Catalog::embedded(),
            &machine(machine_json),
            &Policy::default(),
            project,
            &refs,
            &parsed,
        );
        choice
            .pick_for(&format!("{project}-{version}-{TAGS}.whl"))
            .map(|p| p.label.clone())
    }

    #[test]
    fn torch_and_torchvision_of_one_release_get_the_same_build() {
        for machine_json in [
            H100,
            V100,
            GTX1080,
            RTX5090,
            MI300X,
            CPU,
            ARC_A770,
            ARC_B580_NO_IP,
        ] {
            for (torch, vision) in [("2.9.0", "0.24.0"), ("2.10.0", "0.25.0")] {
                let Some(torch_label) = label_for(
                    "torch",
                    torch,
                    &format!("torch-{torch}-variants.json"),
                    machine_json,
                ) else {
                    return;
                };
                let vision_label = label_for(
                    "torchvision",
                    vision,
                    &format!("torchvision-{vision}-variants.json"),
                    machine_json,
                );
                assert_eq!(Some(torch_label), vision_label, "{machine_json} {torch}");
            }
        }
    }

    #[test]
    fn judgement_is_stated_where_strict_pep_825_differs() {
        let Some(choice) = choose(MI300X, &Policy::default(), true) else {
            return;
        };
        let notes = choice.versions[0].notes.join("\n");
        assert!(notes.contains("bundle their ROCm runtime"), "{notes}");
        assert!(
            notes.contains("strict PEP 825 would choose `null`"),
            "{notes}"
        );
        let Some(choice) = choose(H100, &Policy::default(), true) else {
            return;
        };
        let notes = choice.versions[0].notes.join("\n");
        assert!(notes.contains("only from its driver 580.65.06"), "{notes}");
    }

    #[test]
    fn without_a_variants_file_labels_are_read_as_builds() {
        for (json, expected) in [
            (H100, "cuda13.0"),
            (V100, "cuda12.8"),
            (MI300X, "rocm6.4"),
            (CPU, "null"),
        ] {
            let Some(choice) = choose(json, &Policy::default(), false) else {
                return;
            };
            assert_eq!(linux_label(&choice), Some(expected), "{json}");
        }
    }

    #[test]
    fn a_pinned_backend_gets_its_variant() {
        let policy = Policy {
            pinned: Some("cu128".parse().unwrap()),
            ..Policy::default()
        };
        for with_file in [true, false] {
            let Some(choice) = choose(H100, &policy, with_file) else {
                return;
            };
            assert_eq!(linux_label(&choice), Some("cuda12.8"), "file: {with_file}");
        }
    }

    #[test]
    fn wheels_missing_from_the_variants_file_are_skipped() {
        let text = r#"{"$schema": "https://variants-schema.wheelnext.dev/v0.0.3.json",
            "default-priorities": {"namespace": ["nvidia"]},
            "variants": {"null": {}, "cuda13.0": {"nvidia": {"sm_arch": ["90_real"]}}}}"#;
        let page = page(&["cuda13.0", "cuda12.8", "null"]);
        let refs: Vec<FileRef<'_>> = page
            .iter()
            .map(|(filename, url)| FileRef { filename, url })
            .collect();
        let parsed = BTreeMap::from([(
            refs.len() - 1,
            parse_variants_json(text).map_err(|e| e.to_string()),
        )]);
        let choice = choose_variants(
            Catalog::embedded(),
            &machine(V100),
            &Policy::default(),
            "torch",
            &refs,
            &parsed,
        );
        assert_eq!(linux_label(&choice), Some("null"));
        let (_, why) = choice.skipped.iter().find(|(i, _)| *i == 1).unwrap();
        assert!(why.contains("`cuda12.8` is not listed"), "{why}");
    }

    #[test]
    fn a_variants_file_of_an_unknown_format_serves_no_variant_wheel() {
        // PEP 825: variant wheels of an unknown format version are unsupported. Not one is
        // served (nor chosen by its label), each is skipped with the reason, and the note says
        // why: the page keeps only its plain wheels.
        for schema in [
            "https://variants-schema.wheelnext.dev/v9.0.0.json",
            "https://example.invalid/v0.0.3.json",
            "https://variants-schema.wheelnext.dev/peps/825/v0.2.0.json",
        ] {
            let text = format!(
                r#"{{"$schema": "{schema}",
                    "default-priorities": {{"namespace": ["nvidia"]}},
                    "variants": {{"null": {{}}, "cuda13.0": {{"nvidia": {{"sm_arch": ["90_real"]}}}}}}}}"#
            );
            let page = page(&["cuda13.0", "null"]);
            let refs: Vec<FileRef<'_>> = page
                .iter()
                .map(|(filename, url)| FileRef { filename, url })
                .collect();
            let parsed = BTreeMap::from([(
                refs.len() - 1,
                parse_variants_json(&text).map_err(|e| e.to_string()),
            )]);
            let choice = choose_variants(
                Catalog::embedded(),
                &machine(H100),
                &Policy::default(),
                "torch",
                &refs,
                &parsed,
            );
            assert_eq!(choice.picks().count(), 0, "{schema}");
            assert_eq!(choice.skipped.len(), 3, "{schema}: {:?}", choice.skipped);
            assert!(
                choice
                    .skipped
                    .iter()
                    .all(|(_, why)| why.contains("in a format this proxy does not read")),
                "{:?}",
                choice.skipped
            );
            let notes = choice.versions[0].notes.join("\n");
            assert!(notes.contains(schema), "{notes}");
            assert!(notes.contains("only its plain wheels"), "{notes}");
        }
    }

    #[test]
    fn unknown_namespaces_leave_only_what_fits() {
        // A variant in a namespace the priorities do not list, or one the machine knows nothing
        // of, is rejected with a reason, and the null variant is what remains.
        let text = r#"{"$schema": "https://variants-schema.wheelnext.dev/peps/825/v0.1.1.json",
            "default-priorities": {"namespace": ["nvidia", "quantum"]},
            "variants": {"null": {}, "qpu": {"quantum": {"qubits": ["64"]}},
                         "odd": {"elsewhere": {"thing": ["1"]}}}}"#;
        let page = page(&["qpu", "odd", "null"]);
        let refs: Vec<FileRef<'_>> = page
            .iter()
            .map(|(filename, url)| FileRef { filename, url })
            .collect();
        let parsed = BTreeMap::from([(
            refs.len() - 1,
            parse_variants_json(text).map_err(|e| e.to_string()),
        )]);
        let choice = choose_variants(
            Catalog::embedded(),
            &machine(H100),
            &Policy::default(),
            "torch",
            &refs,
            &parsed,
        );
        assert_eq!(linux_label(&choice), Some("null"));
        let rejected = &choice.versions[0].rejected;
        let reason = |label: &str| {
            rejected
                .iter()
                .find(|(l, _)| l == label)
                .map(|(_, why)| why.clone())
                .unwrap_or_default()
        };
        assert!(reason("qpu").contains("quantum"), "{rejected:?}");
        assert!(
            reason("odd").contains("default-priorities.namespace"),
            "{rejected:?}"
        );

        // With no null variant, a version none of whose variants fit gets nothing.
        let page = page_without_null(&["qpu"]);
        let refs: Vec<FileRef<'_>> = page
            .iter()
            .map(|(filename, url)| FileRef { filename, url })
            .collect();
        let parsed = BTreeMap::from([(
            refs.len() - 1,
            parse_variants_json(text).map_err(|e| e.to_string()),
        )]);
        let choice = choose_variants(
            Catalog::embedded(),
            &machine(H100),
            &Policy::default(),
            "torch",
            &refs,
            &parsed,
        );
        assert_eq!(choice.picks().count(), 0);
        assert!(
            choice
                .skipped
                .iter()
                .any(|(_, why)| why.contains("no variant of")),
            "{:?}",
            choice.skipped
        );
    }

    fn page_without_null(labels: &[&str]) -> Vec<(String, String)> {
        let mut names: Vec<String> = labels
            .iter()
            .map(|label| format!("torch-2.9.0-{TAGS}-{label}.whl"))
            .collect();
        names.push("torch-2.9.0-variants.json".to_string());
        names
            .into_iter()
            .map(|name| (name.clone(), format!("/whl/variant/{name}")))
            .collect()
    }

    #[test]
    fn an_unreadable_variants_file_falls_back_to_labels_and_says_so() {
        let page = page(&["cuda13.0", "null"]);
        let refs: Vec<FileRef<'_>> = page
            .iter()
            .map(|(filename, url)| FileRef { filename, url })
            .collect();
        let error = parse_variants_json("{not json").map_err(|e| e.to_string());
        let parsed = BTreeMap::from([(refs.len() - 1, error)]);
        let choice = choose_variants(
            Catalog::embedded(),
            &machine(H100),
            &Policy::default(),
            "torch",
            &refs,
            &parsed,
        );
        assert_eq!(linux_label(&choice), Some("cuda13.0"));
        assert!(choice.versions[0].notes[0].contains("could not be read"));
    }

    #[test]
    fn filenames_lose_and_regain_their_label() {
        assert_eq!(
            plain_filename("torch-2.9.0-cp312-cp312-manylinux_2_28_x86_64-cuda13.0.whl").as_deref(),
            Some("torch-2.9.0-cp312-cp312-manylinux_2_28_x86_64.whl")
        );
        assert_eq!(
            plain_filename("numpy-2.3.2-1-cp313-cp313t-musllinux_1_2_x86_64-x86_64_v3.whl")
                .as_deref(),
            Some("numpy-2.3.2-1-cp313-cp313t-musllinux_1_2_x86_64.whl")
        );
        assert_eq!(
            plain_filename("torch-2.9.0-cp312-cp312-linux_x86_64.whl"),
            None
        );
        assert_eq!(
            plain_filename("foo-1.2.3-202206090410-py3-none-any-whoopsie-whoops.whl"),
            None
        );
        assert_eq!(
            labelled_filename("torch-2.9.0-cp312-cp312-linux_x86_64.whl", "cuda13.0").as_deref(),
            Some("torch-2.9.0-cp312-cp312-linux_x86_64-cuda13.0.whl")
        );
        assert_eq!(
            labelled_filename("torch-2.9.0-cp312-cp312-linux_x86_64.whl", "Cuda"),
            None
        );
        assert_eq!(
            labelled_filename("torch-2.9.0-cp312-cp312-linux_x86_64.whl", "a-b"),
            None
        );
        assert_eq!(
            labelled_filename("torch-2.9.0-cp312-cp312-linux_x86_64-null.whl", "null"),
            None
        );
    }

    #[test]
    fn bad_labels_never_become_picks() {
        let page = [
            "torch-2.9.0-cp312-cp312-linux_x86_64-CUDA.whl",
            "torch-2.9.0-cp312-cp312-linux_x86_64-cuda99.9.whl",
            "torch-2.9.0-cp312-cp312-linux_x86_64-weird_label.whl",
        ];
        let refs: Vec<FileRef<'_>> = page
            .iter()
            .map(|filename| FileRef {
                filename,
                url: filename,
            })
            .collect();
        let choice = choose_variants(
            Catalog::embedded(),
            &machine(H100),
            &Policy::default(),
            "torch",
            &refs,
            &BTreeMap::new(),
        );
        assert_eq!(choice.picks().count(), 0);
        assert!(
            choice
                .skipped
                .iter()
                .any(|(i, why)| *i == 2 && why.contains("names no build")),
            "{:?}",
            choice.skipped
        );
    }
}
