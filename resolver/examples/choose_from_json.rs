//! How an installer embeds the resolver: it already holds a project's files (a PEP 691 JSON
//! page, with URLs and hashes) and a target machine; it asks which files to consider.
//!
//! ```sh
//! cargo run -p wheelgate-resolver --example choose_from_json -- PAGE.json MACHINE
//! ```
//!
//! `MACHINE` is a token (`wheelgate detect --token`) or a file with `wheelgate detect --json`
//! output. Prints, per version (newest first), the backend chosen, the files kept, and why every
//! other backend was not chosen; then the files dropped for any other reason.

use std::process::ExitCode;

use wheelgate_resolver::index::parse_project_json;
use wheelgate_resolver::select::{FileRef, select_page};
use wheelgate_resolver::{Catalog, Machine, Policy, token};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [page_path, machine_arg] = args.as_slice() else {
        eprintln!("usage: choose_from_json PAGE.json TOKEN|MACHINE.json");
        return ExitCode::from(2);
    };
    match run(page_path, machine_arg) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("choose_from_json: {message}");
            ExitCode::FAILURE
        }
    }
}

fn run(page_path: &str, machine_arg: &str) -> Result<(), String> {
    let text = std::fs::read_to_string(page_path)
        .map_err(|err| format!("cannot read `{page_path}`: {err}"))?;
    let page = parse_project_json(&text).map_err(|err| format!("`{page_path}`: {err}"))?;
    let machine = read_machine(machine_arg)?;

    // The installer's own list, borrowed: selection copies nothing of the page.
    let files: Vec<FileRef<'_>> = page.files.iter().map(FileRef::from).collect();
    let selection = select_page(
        Catalog::embedded(),
        &machine,
        &Policy::default(),
        &page.name,
        &files,
    );

    for version in &selection.versions {
        let chosen = version
            .decision
            .as_ref()
            .and_then(|d| d.chosen.as_ref())
            .map_or_else(|| "no backend".to_string(), ToString::to_string);
        println!("{} {}: {chosen}", selection.project, version.version);
        for &index in &version.kept {
            let file = &page.files[index];
            let sha256 = file.sha256().unwrap_or("no sha256");
            println!("  keep {} ({sha256})", file.filename);
        }
        if let Some(decision) = &version.decision {
            for (backend, reason) in decision.rejections() {
                println!("  {backend}: {reason}");
            }
            for note in &decision.notes {
                println!("  note: {note}");
            }
        }
    }
    for (index, why) in &selection.dropped {
        if !matches!(why, wheelgate_resolver::select::Dropped::NotChosen { .. }) {
            println!("dropped {}: {why}", page.files[*index].filename);
        }
    }
    Ok(())
}

/// A token, or a file holding `wheelgate detect --json` output.
fn read_machine(arg: &str) -> Result<Machine, String> {
    match std::fs::read_to_string(arg) {
        Ok(json) => {
            serde_json::from_str(&json).map_err(|err| format!("`{arg}` is not a machine: {err}"))
        }
        Err(_) => {
            token::decode(arg).map_err(|err| format!("`{arg}` is not a machine token: {err}"))
        }
    }
}
