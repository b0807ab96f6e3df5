//! What the server costs while it runs (resident memory, open descriptors, from `/proc`), and
//! the table the soak prints.

use std::fmt::Write as _;
use std::time::Duration;

use super::clients::Record;

/// One sample of the server process.
#[derive(Debug, Clone, Copy)]
pub struct Sample {
    pub at: Duration,
    pub rss_kib: u64,
    pub descriptors: u64,
}

/// Reads the resident set and the open descriptors of `pid`.
pub fn sample(pid: u32, at: Duration) -> Option<Sample> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let rss_kib = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    let descriptors = std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?.count() as u64;
    Some(Sample {
        at,
        rss_kib,
        descriptors,
    })
}

fn percentile(sorted: &[Duration], p: usize) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    // Nearest rank, in integers: `p` is given in thousandths.
    let rank = (sorted.len() - 1) * p / 1000;
    sorted[rank.min(sorted.len() - 1)]
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
}

fn mb(kib: u64) -> String {
    format!("{}.{} MB", kib / 1024, (kib % 1024) * 10 / 1024)
}

/// The soak's table.
pub fn render(
    record: &mut Record,
    samples: &[Sample],
    run: Duration,
    slowloris: (u64, u64),
    slowloris_count: usize,
) -> String {
    let mut out = String::new();
    let total: usize = record.latencies.values().map(Vec::len).sum();
    let _ = writeln!(
        out,
        "\nsoak: {} s, {total} client requests answered, {slowloris_count} slowloris connections held\n",
        run.as_secs()
    );
    let _ = writeln!(out, "| route | requests | p50 | p99 | max | errors |");
    let _ = writeln!(out, "| --- | --- | --- | --- | --- | --- |");
    for (kind, latencies) in &mut record.latencies {
        latencies.sort_unstable();
        let errors: u64 = record
            .errors
            .iter()
            .filter(|((k, _), _)| k == kind)
            .map(|(_, n)| n)
            .sum();
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {errors} |",
            kind.name(),
            latencies.len(),
            ms(percentile(latencies, 500)),
            ms(percentile(latencies, 990)),
            ms(*latencies.last().unwrap_or(&Duration::ZERO)),
        );
    }
    let _ = writeln!(out, "\nerrors by kind:");
    if record.errors.is_empty() {
        let _ = writeln!(out, "  none");
    }
    for ((kind, what), n) in &record.errors {
        let _ = writeln!(out, "  {}: {what}: {n}", kind.name());
    }
    let max_rss = samples.iter().map(|s| s.rss_kib).max().unwrap_or(0);
    let max_fds = samples.iter().map(|s| s.descriptors).max().unwrap_or(0);
    let _ = writeln!(
        out,
        "\nlongest wait for something cached while the upstream was faulty: {} (target < 2 s)",
        ms(record.worst_cached_during_faults)
    );
    let _ = writeln!(
        out,
        "wheelgate peak RSS: {} (target < 150 MB); peak open descriptors: {max_fds}",
        mb(max_rss)
    );
    let _ = writeln!(
        out,
        "slowloris: {} connections opened, {} closed by the server",
        slowloris.0, slowloris.1
    );
    let _ = writeln!(
        out,
        "corrupt bodies: {} ({} MB checked against their sha256)",
        record.corrupt.len(),
        record.bytes_checked / 1_000_000
    );
    for what in record.corrupt.iter().take(10) {
        let _ = writeln!(out, "  CORRUPT {what}");
    }
    let _ = writeln!(out, "\nRSS and descriptors over time:");
    let step = (samples.len() / 10).max(1);
    for sample in samples.iter().step_by(step) {
        let _ = writeln!(
            out,
            "  {:>4} s  {:>9}  {:>5} fds",
            sample.at.as_secs(),
            mb(sample.rss_kib),
            sample.descriptors
        );
    }
    let cached_errors: u64 = record
        .errors
        .iter()
        .filter(|((kind, _), _)| kind.is_cached())
        .map(|(_, n)| n)
        .sum();
    let _ = writeln!(
        out,
        "\nverdict: {}",
        if record.corrupt.is_empty()
            && cached_errors == 0
            && record.worst_cached_during_faults < Duration::from_secs(2)
            && max_rss < 150 * 1024
        {
            "all targets met"
        } else {
            "TARGETS MISSED"
        }
    );
    out
}
