//! What parsing one HTML project page costs in a fresh process, where the proxy's first
//! request finds it: no warmed-up allocator, every page of the heap touched for the first time.
//! Criterion only sees the warm case.
//!
//! ```sh
//! cargo run --release -p wheelgate-testdata -- torch-page /tmp/torch.html
//! cargo run --release -p wheelgate-resolver --example parse_cold -- /tmp/torch.html [REPEAT]
//! ```
//!
//! Prints the wall time of the first parse and the process's minor page faults around it
//! (`/proc/self/stat` field 10; `-` where there is no procfs); with `REPEAT`, also the median of
//! `REPEAT` more parses in the same process, each page dropped before the next.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use wheelgate_resolver::index::parse_project_html;

const USAGE: &str = "usage: parse_cold PAGE.html [REPEAT]";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (path, repeat) = match args.as_slice() {
        [path] => (path, 0),
        [path, repeat] => {
            let Ok(repeat) = repeat.parse::<usize>() else {
                eprintln!("parse_cold: `{repeat}` is not a count\n{USAGE}");
                return ExitCode::from(2);
            };
            (path, repeat)
        }
        _ => {
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    match run(path, repeat) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("parse_cold: {message}");
            ExitCode::FAILURE
        }
    }
}

fn run(path: &str, repeat: usize) -> Result<(), String> {
    let html =
        std::fs::read_to_string(path).map_err(|err| format!("cannot read `{path}`: {err}"))?;

    let faults_before = minor_faults();
    let start = Instant::now();
    let page = parse_project_html(&html).map_err(|err| format!("`{path}`: {err}"))?;
    let cold = start.elapsed();
    let faults_after = minor_faults();
    println!(
        "cold parse: {} links of {} bytes in {}, minor faults {}",
        page.files.len(),
        html.len(),
        millis(cold),
        match (faults_before, faults_after) {
            (Some(before), Some(after)) => format!("{} ({before} -> {after})", after - before),
            _ => "-".to_owned(),
        }
    );
    drop(page);

    if repeat > 0 {
        let mut times = Vec::with_capacity(repeat);
        for _ in 0..repeat {
            let start = Instant::now();
            let page = parse_project_html(std::hint::black_box(&html))
                .map_err(|err| format!("`{path}`: {err}"))?;
            times.push(start.elapsed());
            drop(std::hint::black_box(page));
        }
        times.sort_unstable();
        println!(
            "warm parse: median {} of {repeat} (min {}, max {})",
            millis(times[repeat / 2]),
            millis(times[0]),
            millis(times[repeat - 1])
        );
    }
    Ok(())
}

fn millis(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1000.0)
}

/// The process's minor page faults so far (`minflt`, field 10 of `/proc/self/stat`).
fn minor_faults() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Field 2 (the command name) may contain spaces; fields after it follow the last `)`.
    let after_name = &stat[stat.rfind(')')? + 1..];
    // After the name: field 3 (state) is the first, so field 10 is the eighth.
    after_name.split_whitespace().nth(7)?.parse().ok()
}
