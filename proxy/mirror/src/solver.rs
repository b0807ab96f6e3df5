//! The solver of one environment: `PubGrub` (the `pubgrub` crate, what uv builds on) over PEP 440
//! versions, on what is known so far about the projects ([`Universe`]). Pure: when it needs a
//! page or a distribution's metadata that is not known yet it stops with [`Need`], the caller
//! fetches it and solves again (cheap: the solve itself takes microseconds per project).
//!
//! Requirements are taken as pip and uv take them: markers evaluated for the environment,
//! `Requires-Python` checked, extras as separate nodes (`torch[opt-einsum]` at a version requires
//! `torch` at exactly that version plus the extra's requirements), pre-releases left out, a
//! yanked version only when a requirement pins exactly it (PEP 592), the newest version first.
//! `[[constraint]]` limits narrow every requirement on their project.

use std::cmp::Reverse;
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::Arc;

use pep440_rs::{Version, VersionSpecifiers};
use pep508_rs::{ExtraName, MarkerEnvironment, VersionOrUrl};
use pubgrub::{
    DefaultStringReporter, Dependencies, DependencyConstraints, DependencyProvider,
    PackageResolutionStatistics, PubGrubError, Ranges, Reporter,
};
use wheelgate_resolver::filename::normalize_name;

use wheelgate_files::metadata::Metadata;

/// A node of the dependency graph.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Node {
    /// The environment's declared requirements.
    Root,
    /// A project, by normalized name.
    Project(String),
    /// A project with one extra: requires the project at the same version, and the extra's
    /// requirements.
    Extra(String, String),
}

impl fmt::Display for Node {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Node::Root => f.write_str("the declared requirements"),
            Node::Project(name) => f.write_str(name),
            Node::Extra(name, extra) => write!(f, "{name}[{extra}]"),
        }
    }
}

/// One version of a project that has files for the environment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Candidate {
    /// Every file of the version is yanked: taken only when pinned exactly.
    pub yanked: bool,
}

/// What is known about one project in the environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProjectState {
    /// Its upstream has no page for it (`url`).
    NoPage { url: String },
    /// The versions with files for this environment (possibly none).
    Versions(BTreeMap<Version, Candidate>),
}

/// Everything known so far about the projects, for one environment.
#[derive(Debug, Clone)]
pub struct Universe {
    /// The environment's Python (`3.12.0`), for `Requires-Python`.
    pub python: Version,
    pub markers: MarkerEnvironment,
    pub projects: HashMap<String, ProjectState>,
    /// By project and public version.
    pub metadata: HashMap<(String, Version), Arc<Metadata>>,
    /// Versions whose metadata is invalid, with the reason: unavailable, as pip and uv treat a
    /// candidate whose metadata cannot be read, so an older version can be chosen instead.
    pub unusable: HashMap<(String, Version), String>,
}

/// A declared top-level requirement.
#[derive(Debug, Clone, PartialEq)]
pub struct RootRequirement {
    pub project: String,
    /// `None`: any version.
    pub versions: Option<VersionSpecifiers>,
    pub extras: Vec<String>,
}

/// Why a solve stopped without an answer.
#[derive(Debug, thiserror::Error)]
pub enum Need {
    /// The project's page is not known yet.
    #[error("the page of `{0}` is needed")]
    Page(String),
    /// The metadata of this version is not known yet.
    #[error("the metadata of `{0}` {1} is needed")]
    Metadata(String, Version),
    /// A requirement resolution cannot follow; the message says which and why.
    #[error("{0}")]
    Unsupported(String),
}

/// The outcome of one solve.
#[derive(Debug)]
pub enum Solve {
    /// A version for every project in the closure, by normalized name.
    Resolved(BTreeMap<String, Version>),
    /// No consistent set exists: `PubGrub`'s derivation, in words.
    Conflict(String),
    /// More must be known first (or a requirement cannot be followed).
    Stopped(Need),
}

/// Solves `roots` with `constraints` on what `universe` knows.
pub fn solve(
    universe: &Universe,
    roots: &[RootRequirement],
    constraints: &BTreeMap<String, Ranges<Version>>,
) -> Solve {
    let provider = Provider {
        universe,
        roots,
        constraints,
    };
    match pubgrub::resolve(&provider, Node::Root, Version::new([0])) {
        Ok(selected) => Solve::Resolved(
            selected
                .into_iter()
                .filter_map(|(node, version)| match node {
                    Node::Project(name) => Some((name, version)),
                    Node::Root | Node::Extra(..) => None,
                })
                .collect(),
        ),
        Err(PubGrubError::NoSolution(tree)) => {
            // Not collapsed: "there is no version of torch in ==9.9" is the explanation.
            // The root's version means nothing to a reader.
            let root = Node::Root.to_string();
            let text = DefaultStringReporter::report(&tree)
                .replace(
                    &format!("{root} 0 depends on"),
                    &format!("{root} depend on"),
                )
                .replace(&format!("{root} 0 is forbidden"), "no resolution exists")
                .replace(&format!("{root} 0"), &root);
            Solve::Conflict(text)
        }
        Err(
            PubGrubError::ErrorChoosingVersion { source, .. }
            | PubGrubError::ErrorRetrievingDependencies { source, .. }
            | PubGrubError::ErrorInShouldCancel(source),
        ) => Solve::Stopped(source),
    }
}

struct Provider<'a> {
    universe: &'a Universe,
    roots: &'a [RootRequirement],
    constraints: &'a BTreeMap<String, Ranges<Version>>,
}

impl Provider<'_> {
    fn versions(&self, project: &str) -> Result<Option<&BTreeMap<Version, Candidate>>, Need> {
        match self.universe.projects.get(project) {
            None => Err(Need::Page(project.to_string())),
            Some(ProjectState::NoPage { .. }) => Ok(None),
            Some(ProjectState::Versions(versions)) => Ok(Some(versions)),
        }
    }

    /// Adds a requirement on `project` (and its extras) to `deps`, narrowed by the constraints
    /// and intersected with any earlier requirement on the same node.
    fn add(
        &self,
        deps: &mut DependencyConstraints<Node, Ranges<Version>>,
        project: &str,
        range: Ranges<Version>,
        extras: &[String],
    ) {
        let range = match self.constraints.get(project) {
            Some(limit) => range.intersection(limit),
            None => range,
        };
        for extra in extras {
            let node = Node::Extra(project.to_string(), extra.clone());
            let merged = deps
                .get(&node)
                .map_or_else(|| range.clone(), |r| r.intersection(&range));
            deps.insert(node, merged);
        }
        let node = Node::Project(project.to_string());
        let merged = deps
            .get(&node)
            .map_or_else(|| range.clone(), |r| r.intersection(&range));
        deps.insert(node, merged);
    }
}

impl DependencyProvider for Provider<'_> {
    type P = Node;
    type V = Version;
    type VS = Ranges<Version>;
    type M = String;
    type Priority = (u32, Reverse<usize>);
    type Err = Need;

    fn prioritize(
        &self,
        node: &Node,
        range: &Ranges<Version>,
        stats: &PackageResolutionStatistics,
    ) -> Self::Priority {
        // Conflicting packages first, then the most constrained (fewest versions left).
        let count = match node {
            Node::Root => 0,
            Node::Project(name) | Node::Extra(name, _) => match self.versions(name) {
                Ok(Some(versions)) => versions.keys().filter(|v| range.contains(*v)).count(),
                Ok(None) => 0,
                Err(_) => usize::MAX,
            },
        };
        (stats.conflict_count(), Reverse(count))
    }

    fn choose_version(
        &self,
        node: &Node,
        range: &Ranges<Version>,
    ) -> Result<Option<Version>, Need> {
        let name = match node {
            Node::Root => return Ok(Some(Version::new([0]))),
            Node::Project(name) | Node::Extra(name, _) => name,
        };
        let Some(versions) = self.versions(name)? else {
            return Ok(None);
        };
        let newest = versions
            .iter()
            .rev()
            .find(|(version, candidate)| !candidate.yanked && range.contains(*version))
            .map(|(version, _)| version.clone());
        if newest.is_some() {
            return Ok(newest);
        }
        // A yanked version only when the requirement pins exactly it.
        Ok(range
            .as_singleton()
            .filter(|version| versions.contains_key(*version))
            .cloned())
    }

    fn get_dependencies(
        &self,
        node: &Node,
        version: &Version,
    ) -> Result<Dependencies<Node, Ranges<Version>, String>, Need> {
        let mut deps = DependencyConstraints::default();
        let (name, extra) = match node {
            Node::Root => {
                for root in self.roots {
                    let range = root
                        .versions
                        .clone()
                        .map_or_else(Ranges::full, Ranges::from);
                    self.add(&mut deps, &root.project, range, &root.extras);
                }
                return Ok(Dependencies::Available(deps));
            }
            Node::Project(name) => (name, None),
            Node::Extra(name, extra) => {
                // The extra at a version is the project at exactly that version.
                deps.insert(
                    Node::Project(name.clone()),
                    Ranges::singleton(version.clone()),
                );
                (name, Some(extra))
            }
        };
        let key = (name.clone(), version.clone());
        if let Some(reason) = self.universe.unusable.get(&key) {
            return Ok(Dependencies::Unavailable(reason.clone()));
        }
        let Some(metadata) = self.universe.metadata.get(&key) else {
            return Err(Need::Metadata(name.clone(), version.clone()));
        };
        if let Some(requires_python) = &metadata.requires_python
            && !requires_python.contains(&self.universe.python)
        {
            return Ok(Dependencies::Unavailable(format!(
                "requires Python {requires_python}, not {}",
                self.universe.python
            )));
        }
        let extras: Vec<ExtraName> = extra
            .iter()
            .filter_map(|e| ExtraName::new((*e).clone()).ok())
            .collect();
        for requirement in &metadata.requires_dist {
            if !requirement.evaluate_markers(&self.universe.markers, &extras) {
                continue;
            }
            let project = normalize_name(requirement.name.as_ref());
            let requested: Vec<String> =
                requirement.extras.iter().map(ToString::to_string).collect();
            if project == *name && requested.is_empty() {
                // `torch[all]` requiring `torch`: already there.
                continue;
            }
            let range = match &requirement.version_or_url {
                None => Ranges::full(),
                Some(VersionOrUrl::VersionSpecifier(specifiers)) => {
                    Ranges::from(specifiers.clone())
                }
                Some(VersionOrUrl::Url(url)) => {
                    return Err(Need::Unsupported(format!(
                        "`{name}` {version} requires `{}` from the URL `{url}`, which an index mirror cannot hold",
                        requirement.name
                    )));
                }
            };
            self.add(&mut deps, &project, range, &requested);
        }
        Ok(Dependencies::Available(deps))
    }
}

#[cfg(test)]
mod tests {
    use std::str::FromStr;

    use pep508_rs::{MarkerEnvironmentBuilder, Requirement};

    use super::*;

    /// A universe from `(project, version, requirements)`, every version with files.
    fn universe(python: &str, entries: &[(&str, &str, &[&str])]) -> Universe {
        let markers = MarkerEnvironment::try_from(MarkerEnvironmentBuilder {
            implementation_name: "cpython",
            implementation_version: python,
            os_name: "posix",
            platform_machine: "x86_64",
            platform_python_implementation: "CPython",
            platform_release: "",
            platform_system: "Linux",
            platform_version: "",
            python_full_version: python,
            python_version: &python[..python.rfind('.').unwrap()],
            sys_platform: "linux",
        })
        .unwrap();
        let mut universe = Universe {
            python: python.parse().unwrap(),
            markers,
            projects: HashMap::new(),
            metadata: HashMap::new(),
            unusable: HashMap::new(),
        };
        for (project, version, requires) in entries {
            let version: Version = version.parse().unwrap();
            let ProjectState::Versions(versions) = universe
                .projects
                .entry((*project).to_string())
                .or_insert_with(|| ProjectState::Versions(BTreeMap::new()))
            else {
                unreachable!()
            };
            versions.insert(version.clone(), Candidate::default());
            let mut metadata = Metadata::default();
            for requirement in *requires {
                if let Some(python) = requirement.strip_prefix("python") {
                    metadata.requires_python = Some(python.parse().unwrap());
                } else {
                    metadata
                        .requires_dist
                        .push(Requirement::from_str(requirement).unwrap());
                }
            }
            universe
                .metadata
                .insert(((*project).to_string(), version), Arc::new(metadata));
        }
        universe
    }

    fn root(project: &str, versions: &str) -> RootRequirement {
        RootRequirement {
            project: project.to_string(),
            versions: (!versions.is_empty()).then(|| versions.parse().unwrap()),
            extras: Vec::new(),
        }
    }

    fn resolved(solve: Solve) -> Vec<String> {
        match solve {
            Solve::Resolved(map) => map.iter().map(|(p, v)| format!("{p}=={v}")).collect(),
            other => panic!("not resolved: {other:?}"),
        }
    }

    fn conflict(solve: Solve) -> String {
        match solve {
            Solve::Conflict(text) => text,
            other => panic!("no conflict: {other:?}"),
        }
    }

    /// torch's real structure, shortened: Requires-Python, markers, a chain with a pin.
    fn torch_universe(python: &str) -> Universe {
        universe(
            python,
            &[
                (
                    "torch",
                    "2.9.0",
                    &[
                        "python>=3.10",
                        "filelock",
                        "setuptools; python_version >= \"3.12\"",
                        "sympy>=1.13.3",
                        "jinja2",
                        "nvidia-nccl-cu12==2.27.5; platform_system == \"Linux\" and platform_machine == \"x86_64\"",
                        "nvidia-cufile-cu12==1.13.1.3; platform_system == \"Windows\"",
                        "opt-einsum>=3.3; extra == \"opt-einsum\"",
                    ],
                ),
                ("torchvision", "0.24.0", &["torch (==2.9.0)", "numpy"]),
                ("filelock", "3.19.1", &["python>=3.9"]),
                ("filelock", "4.2.11", &["python>=3.11"]),
                ("setuptools", "84.2.1", &[]),
                ("sympy", "1.14.0", &["mpmath<1.4,>=1.1.0"]),
                ("mpmath", "1.3.0", &[]),
                ("mpmath", "1.4.0", &[]),
                ("jinja2", "3.1.6", &["MarkupSafe>=2.0"]),
                ("markupsafe", "3.0.4", &[]),
                ("nvidia-nccl-cu12", "2.27.5", &[]),
                ("numpy", "2.2.6", &["python>=3.10"]),
                ("numpy", "2.4.6", &["python>=3.11"]),
                ("opt-einsum", "3.4.0", &[]),
            ],
        )
    }

    #[test]
    fn the_closure_follows_markers_python_and_pins() {
        let roots = [root("torch", "==2.9.0"), root("torchvision", "==0.24.0")];
        let on_310 = resolved(solve(&torch_universe("3.10.0"), &roots, &BTreeMap::new()));
        assert_eq!(
            on_310,
            [
                "filelock==3.19.1",
                "jinja2==3.1.6",
                "markupsafe==3.0.4",
                "mpmath==1.3.0",
                "numpy==2.2.6",
                "nvidia-nccl-cu12==2.27.5",
                "sympy==1.14.0",
                "torch==2.9.0",
                "torchvision==0.24.0",
            ]
        );
        let on_312 = resolved(solve(&torch_universe("3.12.0"), &roots, &BTreeMap::new()));
        assert!(
            on_312.contains(&"filelock==4.2.11".to_string()),
            "{on_312:?}"
        );
        assert!(
            on_312.contains(&"setuptools==84.2.1".to_string()),
            "{on_312:?}"
        );
        assert!(on_312.contains(&"numpy==2.4.6".to_string()), "{on_312:?}");
    }

    #[test]
    fn constraints_and_extras() {
        let mut extra = root("torch", "==2.9.0");
        extra.extras = vec!["opt-einsum".to_string()];
        let constraints = BTreeMap::from([(
            "numpy".to_string(),
            Ranges::from(VersionSpecifiers::from_str("<2.3").unwrap()),
        )]);
        let names = resolved(solve(
            &torch_universe("3.12.0"),
            &[extra, root("torchvision", "")],
            &constraints,
        ));
        assert!(
            names.contains(&"opt-einsum==3.4.0".to_string()),
            "{names:?}"
        );
        assert!(names.contains(&"numpy==2.2.6".to_string()), "{names:?}");
    }

    #[test]
    fn a_conflict_names_the_chain() {
        let mut universe = torch_universe("3.12.0");
        universe.projects.insert(
            "mpmath".to_string(),
            ProjectState::Versions(BTreeMap::from([(
                "1.4.0".parse().unwrap(),
                Candidate::default(),
            )])),
        );
        let text = conflict(solve(
            &universe,
            &[root("torchvision", "==0.24.0")],
            &BTreeMap::new(),
        ));
        for part in [
            "mpmath",
            "sympy",
            "torch",
            "torchvision",
            "the declared requirements",
        ] {
            assert!(text.contains(part), "{part} not in {text}");
        }
        assert!(text.contains("<1.4") || text.contains("1.1.0"), "{text}");
    }

    #[test]
    fn a_requirement_that_fits_nothing_is_a_conflict_naming_it() {
        let text = conflict(solve(
            &torch_universe("3.12.0"),
            &[root("numpy", "==1.0")],
            &BTreeMap::new(),
        ));
        assert!(text.contains("numpy"), "{text}");
        assert!(text.contains("1.0"), "{text}");
        // Requires-Python excludes a version for its stated reason.
        let text = conflict(solve(
            &torch_universe("3.10.0"),
            &[root("numpy", ">=2.4")],
            &BTreeMap::new(),
        ));
        assert!(text.contains("requires Python >=3.11"), "{text}");
    }

    #[test]
    fn a_version_with_invalid_metadata_is_skipped_and_named_when_nothing_else_fits() {
        let mut universe = universe(
            "3.12.0",
            &[("a", "1.0", &["b"]), ("b", "1.0", &[]), ("b", "2.0", &[])],
        );
        universe
            .unusable
            .insert(("b".to_string(), "2.0".parse().unwrap()), "bad".to_string());
        assert_eq!(
            resolved(solve(&universe, &[root("a", "")], &BTreeMap::new())),
            ["a==1.0", "b==1.0"]
        );
        // Pinned to the invalid one: a conflict that gives the reason.
        let text = conflict(solve(&universe, &[root("b", "==2.0")], &BTreeMap::new()));
        assert!(text.contains("bad"), "{text}");
    }

    #[test]
    fn a_cycle_resolves_once_and_a_contradictory_cycle_is_a_conflict() {
        let universe_ok = universe("3.12.0", &[("a", "1.0", &["b"]), ("b", "1.0", &["a==1.0"])]);
        assert_eq!(
            resolved(solve(&universe_ok, &[root("a", "")], &BTreeMap::new())),
            ["a==1.0", "b==1.0"]
        );
        let contradictory = universe("3.12.0", &[("a", "1.0", &["b"]), ("b", "1.0", &["a>=2"])]);
        let text = conflict(solve(&contradictory, &[root("a", "")], &BTreeMap::new()));
        assert!(
            text.contains("b 1.0 depends on a >=2")
                && text.contains("a 1.0 depends on b, a 1.0 is forbidden"),
            "{text}"
        );
        assert!(
            text.contains("the declared requirements depend on a, no resolution exists"),
            "{text}"
        );
    }

    #[test]
    fn missing_knowledge_stops_the_solve() {
        let mut universe = torch_universe("3.12.0");
        universe.projects.remove("markupsafe");
        assert!(matches!(
            solve(&universe, &[root("jinja2", "")], &BTreeMap::new()),
            Solve::Stopped(Need::Page(name)) if name == "markupsafe"
        ));
        let mut universe = torch_universe("3.12.0");
        universe
            .metadata
            .remove(&("jinja2".to_string(), "3.1.6".parse().unwrap()));
        assert!(matches!(
            solve(&universe, &[root("jinja2", "")], &BTreeMap::new()),
            Solve::Stopped(Need::Metadata(name, _)) if name == "jinja2"
        ));
        // A project without a page: no version of it, named.
        let mut universe = torch_universe("3.12.0");
        universe.projects.insert(
            "markupsafe".to_string(),
            ProjectState::NoPage {
                url: "u".to_string(),
            },
        );
        let text = conflict(solve(&universe, &[root("jinja2", "")], &BTreeMap::new()));
        assert!(text.contains("markupsafe"), "{text}");
    }

    #[test]
    fn yanked_only_when_pinned() {
        let mut universe = universe(
            "3.12.0",
            &[("filelock", "3.19.1", &[]), ("filelock", "3.20.0", &[])],
        );
        let ProjectState::Versions(versions) = universe.projects.get_mut("filelock").unwrap()
        else {
            unreachable!()
        };
        versions.get_mut(&"3.20.0".parse().unwrap()).unwrap().yanked = true;
        assert_eq!(
            resolved(solve(&universe, &[root("filelock", "")], &BTreeMap::new())),
            ["filelock==3.19.1"]
        );
        assert_eq!(
            resolved(solve(
                &universe,
                &[root("filelock", "==3.20.0")],
                &BTreeMap::new()
            )),
            ["filelock==3.20.0"]
        );
    }

    #[test]
    fn a_url_requirement_is_named() {
        let universe = universe(
            "3.12.0",
            &[("a", "1.0", &["b @ https://example.invalid/b.whl"])],
        );
        assert!(matches!(
            solve(&universe, &[root("a", "")], &BTreeMap::new()),
            Solve::Stopped(Need::Unsupported(text)) if text.contains("`b`") && text.contains("URL")
        ));
    }
}
