//! The target environments of a resolving mirror: every declared Python version × platform ×
//! backend, and every declared machine × Python version × its own and every declared platform
//! (the same accelerators there, [`Machine::elsewhere`]). Each is one place an installer will
//! run, with the PEP 508 marker values such a machine reports, so requirements are evaluated as
//! pip and uv evaluate them there.

use std::fmt;

use pep508_rs::{MarkerEnvironment, MarkerEnvironmentBuilder};
use wheelgate_resolver::machine::{Arch, Os};
use wheelgate_resolver::{Backend, Machine, Platform, Policy};

use super::config::{MirrorConfig, PackageEntry, PythonVersion};
use wheelgate_index::sources::ProjectKind;

/// Which PyTorch build an environment's PyTorch projects come in.
#[derive(Debug, Clone, PartialEq)]
pub enum Build {
    /// Every PyTorch project in this backend (`backends = [...]`).
    Backend(Backend),
    /// What the server's selection gives this machine, version by version (`machines = [...]`);
    /// `number` counts the declared machines from 1, for the environment's name.
    Machine {
        number: usize,
        machine: Box<Machine>,
    },
    /// No PyTorch build declared: PyTorch projects have no files here.
    None,
}

/// One target environment.
#[derive(Debug, Clone, PartialEq)]
pub struct Environment {
    /// `py312-linux-x86_64-cu130`, `py313t-linux-x86_64-machine1`, `py312-linux-x86_64-rocm6_4`:
    /// without dots, since it names a PEP 751 lock (`pylock.<name>.toml`).
    pub name: String,
    pub python: PythonVersion,
    pub platform: Platform,
    pub build: Build,
    markers: MarkerEnvironment,
}

impl Environment {
    /// An environment; its marker values follow from the Python version and platform.
    pub fn new(python: PythonVersion, platform: Platform, build: Build) -> Environment {
        let suffix = match &build {
            Build::Backend(backend) => format!("-{}", backend.to_string().replace('.', "_")),
            Build::Machine { number, .. } => format!("-machine{number}"),
            Build::None => String::new(),
        };
        Environment {
            name: format!(
                "py{}{}{}-{platform}{suffix}",
                python.major,
                python.minor,
                if python.free_threaded { "t" } else { "" }
            ),
            markers: marker_environment(python, platform),
            python,
            platform,
            build,
        }
    }

    /// The PEP 508 marker values of this environment.
    pub fn markers(&self) -> &MarkerEnvironment {
        &self.markers
    }

    /// The machine the server's selection is asked about, and with which policy: a CPU-only
    /// machine with the backend pinned, or the declared machine with the configured policy.
    pub fn selection(&self, policy: &Policy) -> Option<(Machine, Policy)> {
        match &self.build {
            Build::Backend(backend) => Some((
                Machine::cpu_only(self.platform),
                Policy {
                    pinned: Some(backend.clone()),
                    prefer: Vec::new(),
                },
            )),
            Build::Machine { machine, .. } => {
                Some((machine.elsewhere(self.platform), policy.clone()))
            }
            Build::None => None,
        }
    }

    /// Whether `entry` is one of this environment's top-level requirements: its Python
    /// versions and platforms include this one's, and for a PyTorch project its builds name
    /// this environment's backend or machine.
    pub fn declares(&self, entry: &PackageEntry) -> bool {
        if !entry.python.contains(&self.python) {
            return false;
        }
        match (&self.build, entry.kind) {
            (Build::Machine { machine, .. }, ProjectKind::Pytorch) => {
                entry.machines.contains(machine.as_ref())
                    && (self.platform == machine.platform
                        || entry.platforms.contains(&self.platform))
            }
            (Build::Machine { .. }, ProjectKind::General) => {
                entry.platforms.contains(&self.platform)
            }
            (Build::Backend(backend), ProjectKind::Pytorch) => {
                entry.platforms.contains(&self.platform) && entry.backends.contains(backend)
            }
            (_, ProjectKind::General) => entry.platforms.contains(&self.platform),
            (Build::None, ProjectKind::Pytorch) => false,
        }
    }
}

impl fmt::Display for Environment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)
    }
}

/// The environments of the configuration's resolving entries, in a stable order (Python, then
/// platform, then backend; machines last), without duplicates. Only environments that declare
/// at least one entry are returned.
pub fn environments(config: &MirrorConfig) -> Vec<Environment> {
    let resolving: Vec<&PackageEntry> = config.packages.iter().filter(|p| p.dependencies).collect();
    let mut pythons: Vec<PythonVersion> = resolving
        .iter()
        .flat_map(|p| p.python.iter().copied())
        .collect();
    pythons.sort_unstable();
    pythons.dedup();
    let mut platforms: Vec<Platform> = Vec::new();
    let mut backends: Vec<Backend> = Vec::new();
    let mut machines: Vec<Machine> = Vec::new();
    for entry in &resolving {
        for platform in &entry.platforms {
            if !platforms.contains(platform) {
                platforms.push(*platform);
            }
        }
        if entry.kind == ProjectKind::Pytorch {
            for backend in &entry.backends {
                if !backends.contains(backend) {
                    backends.push(backend.clone());
                }
            }
            for machine in &entry.machines {
                if !machines.contains(machine) {
                    machines.push(machine.clone());
                }
            }
        }
    }
    let mut all = Vec::new();
    for &python in &pythons {
        for &platform in &platforms {
            if backends.is_empty() {
                all.push(Environment::new(python, platform, Build::None));
            }
            for backend in &backends {
                all.push(Environment::new(
                    python,
                    platform,
                    Build::Backend(backend.clone()),
                ));
            }
        }
        // A declared machine on its own platform, then on every declared platform: the build
        // this kind of machine runs there, as a universal lock holds it.
        for (index, machine) in machines.iter().enumerate() {
            let mut on = vec![machine.platform];
            on.extend(platforms.iter().filter(|p| **p != machine.platform));
            for platform in on {
                all.push(Environment::new(
                    python,
                    platform,
                    Build::Machine {
                        number: index + 1,
                        machine: Box::new(machine.clone()),
                    },
                ));
            }
        }
    }
    all.retain(|env| resolving.iter().any(|entry| env.declares(entry)));
    all
}

/// The marker values `CPython` reports on `platform` (`platform.system()`, `platform.machine()`,
/// `sys.platform`, `os.name`); the patch version is `.0`, as `uv pip compile --python-version`
/// assumes. `platform_release` and `platform_version` are unknown ahead of time and left empty.
fn marker_environment(python: PythonVersion, platform: Platform) -> MarkerEnvironment {
    let (os_name, platform_system, sys_platform) = match platform.os {
        Os::Linux => ("posix", "Linux", "linux"),
        Os::Macos => ("posix", "Darwin", "darwin"),
        Os::Windows => ("nt", "Windows", "win32"),
    };
    let platform_machine = match (platform.os, platform.arch) {
        (Os::Windows, Arch::X86_64) => "AMD64",
        (Os::Windows, Arch::Aarch64) => "ARM64",
        (Os::Macos, Arch::Aarch64) => "arm64",
        (_, Arch::X86_64) => "x86_64",
        (_, Arch::Aarch64) => "aarch64",
        // `platform.machine()` on IBM Z Linux.
        (_, Arch::S390x) => "s390x",
    };
    let python_version = format!("{}.{}", python.major, python.minor);
    let python_full_version = format!("{python_version}.0");
    MarkerEnvironment::try_from(MarkerEnvironmentBuilder {
        implementation_name: "cpython",
        implementation_version: &python_full_version,
        os_name,
        platform_machine,
        platform_python_implementation: "CPython",
        platform_release: "",
        platform_system,
        platform_version: "",
        python_full_version: &python_full_version,
        python_version: &python_version,
        sys_platform,
    })
    .expect("a Python version of two numbers is a valid version")
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::str::FromStr;

    use pep508_rs::Requirement;

    use super::*;

    fn config(text: &str) -> MirrorConfig {
        MirrorConfig::parse(text, Path::new("mirror.toml")).unwrap()
    }

    fn applies(env: &Environment, requirement: &str) -> bool {
        Requirement::<pep508_rs::VerbatimUrl>::from_str(requirement)
            .unwrap()
            .evaluate_markers(env.markers(), &[])
    }

    #[test]
    fn every_python_platform_and_backend_then_machines() {
        let config = config(
            r#"
            python = ["3.12", "3.10"]
            platforms = ["linux-x86_64", "linux-aarch64"]
            backends = ["cu130", "cpu"]
            [[package]]
            name = "torch"
            versions = "==2.9.0"
            [[package]]
            name = "torchaudio"
            python = ["3.12"]
            machines = [{ platform = "linux-x86_64", nvidia = { driver_version = "580.65.06", gpus = [{ compute_capability = "9.0" }] } }]
            [[package]]
            name = "filelock"
            dependencies = false
            "#,
        );
        let names: Vec<String> = environments(&config)
            .iter()
            .map(|e| e.name.clone())
            .collect();
        assert_eq!(
            names,
            [
                "py310-linux-x86_64-cu130",
                "py310-linux-x86_64-cpu",
                "py310-linux-aarch64-cu130",
                "py310-linux-aarch64-cpu",
                "py312-linux-x86_64-cu130",
                "py312-linux-x86_64-cpu",
                "py312-linux-aarch64-cu130",
                "py312-linux-aarch64-cpu",
                "py312-linux-x86_64-machine1",
                "py312-linux-aarch64-machine1",
            ]
        );
    }

    #[test]
    fn markers_as_the_reference_metadata_uses_them() {
        let env = |python: &str, platform: &str| {
            Environment::new(
                python.parse().unwrap(),
                platform.parse().unwrap(),
                Build::None,
            )
        };
        let cuda = r#"nvidia-nccl-cu12==2.27.5; platform_system == "Linux" and platform_machine == "x86_64""#;
        let setuptools = r#"setuptools; python_version >= "3.12""#;
        assert!(applies(&env("3.12", "linux-x86_64"), cuda));
        assert!(!applies(&env("3.12", "linux-aarch64"), cuda));
        assert!(!applies(&env("3.12", "windows-x86_64"), cuda));
        assert!(applies(&env("3.12", "linux-aarch64"), setuptools));
        assert!(!applies(&env("3.10", "linux-x86_64"), setuptools));
        assert!(applies(
            &env("3.11", "windows-x86_64"),
            r#"colorama; sys_platform == "win32" and os_name == "nt" and platform_machine == "AMD64""#
        ));
        assert!(applies(
            &env("3.11", "macos-arm64"),
            r#"x; sys_platform == "darwin" and implementation_name == "cpython" and python_full_version >= "3.11.0""#
        ));
        assert!(!applies(
            &env("3.11", "linux-x86_64"),
            r#"importlib-metadata; python_version < "3.10""#
        ));
    }
}
