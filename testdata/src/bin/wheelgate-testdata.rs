//! Writes the generated `/whl/torch/` page to a file (for `scripts/bench-proxy`):
//! `wheelgate-testdata torch-page OUT.html`.

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [command, path] = args.as_slice() else {
        eprintln!("usage: wheelgate-testdata torch-page OUT.html");
        return ExitCode::from(2);
    };
    if command != "torch-page" {
        eprintln!(
            "wheelgate-testdata: unknown command `{command}`; the one command is `torch-page`"
        );
        return ExitCode::from(2);
    }
    let html = wheelgate_testdata::torch_page_html();
    if let Err(err) = std::fs::write(path, &html) {
        eprintln!("wheelgate-testdata: cannot write `{path}`: {err}");
        return ExitCode::FAILURE;
    }
    println!(
        "{} links, {} bytes",
        wheelgate_testdata::torch_files().len(),
        html.len()
    );
    ExitCode::SUCCESS
}
