//! Runs every probe and assembles the machine description with the provenance of each fact.

use serde::Serialize;
use wheelgate_resolver::{Backend, Machine, Os};

use crate::context::ProbeContext;
use crate::overrides::{self, OverrideError};
use crate::source::{Facts, Source, Trail};
use crate::{amd, cpu, intel, libc, nvidia, pci, platform};

/// The machine description and where each fact came from.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Detection {
    /// The machine as the probes found it, overrides applied.
    pub machine: Machine,
    /// Every fact in the order found, with its source and the sources that failed before it.
    pub facts: Facts,
    /// The backend pinned by [`overrides::BACKEND`], which selection must use.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backend_pin: Option<Backend>,
}

/// Why detection stopped: only a malformed override does; an unreadable source never does.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DetectError {
    #[error(transparent)]
    /// An override variable's value could not be read.
    Override(#[from] OverrideError),
}

/// Describes the machine `ctx` points at.
pub fn detect(ctx: &ProbeContext) -> Result<Detection, DetectError> {
    let mut facts = Facts::default();
    let platform_overridden = overrides::platform(&ctx.env)?.is_some();
    let platform = platform::probe(ctx, &mut facts)?;
    let mut machine = Machine::cpu_only(platform);
    cpu::probe(ctx, &mut machine, platform_overridden, &mut facts)?;
    let linux = platform.os == Os::Linux;
    if linux {
        machine.glibc = libc::probe(ctx, &mut facts)?;
    }
    let pci = if linux {
        let (devices, fact) = pci::scan(&ctx.sysroot);
        facts.push(fact);
        devices
    } else {
        Vec::new()
    };
    if platform.os != Os::Macos {
        machine.nvidia = nvidia::probe(ctx, platform.os, &pci, &mut facts)?;
    }
    machine.amd = amd::probe(ctx, linux, &pci, &mut facts)?;
    machine.intel = intel::probe(ctx, linux, &pci, &mut facts)?;
    let backend_pin = overrides::backend_override(&ctx.env)?;
    if let Some(backend) = &backend_pin {
        facts.push(Trail::new("backend_pin").found(backend, Source::Override(overrides::BACKEND)));
    }
    Ok(Detection {
        machine,
        facts,
        backend_pin,
    })
}
