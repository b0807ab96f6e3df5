//! Writes the generated `/whl/torch/` page to a file (for `scripts/bench-proxy`), optionally
//! with the real sha256 of some files (the wheels the benchmark really serves):
//! `wheelgate-testdata torch-page OUT.html [FILENAME=SHA256 ...]`.

use std::process::ExitCode;

const USAGE: &str = "usage: wheelgate-testdata torch-page OUT.html [FILENAME=SHA256 ...]";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [command, path, overrides @ ..] = args.as_slice() else {
        eprintln!("{USAGE}");
        return ExitCode::from(2);
    };
    if command != "torch-page" {
        eprintln!(
            "wheelgate-testdata: unknown command `{command}`; the one command is `torch-page`\n{USAGE}"
        );
        return ExitCode::from(2);
    }
    let mut files = wheelgate_testdata::torch_files();
    for spec in overrides {
        let Some((name, sha256)) = spec.split_once('=') else {
            eprintln!("wheelgate-testdata: `{spec}` is not FILENAME=SHA256\n{USAGE}");
            return ExitCode::from(2);
        };
        if sha256.len() != 64 || !sha256.bytes().all(|b| b.is_ascii_hexdigit()) {
            eprintln!("wheelgate-testdata: `{sha256}` is not a sha256 (64 hex digits)");
            return ExitCode::from(2);
        }
        let Some(file) = files.iter_mut().find(|f| f.filename == name) else {
            eprintln!("wheelgate-testdata: `{name}` is not on the generated page");
            return ExitCode::from(2);
        };
        file.sha256 = sha256.to_ascii_lowercase();
    }
    let html = wheelgate_testdata::page_html(&files);
    if let Err(err) = std::fs::write(path, &html) {
        eprintln!("wheelgate-testdata: cannot write `{path}`: {err}");
        return ExitCode::FAILURE;
    }
    println!("{}", files.len());
    ExitCode::SUCCESS
}
