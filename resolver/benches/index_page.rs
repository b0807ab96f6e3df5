//! Parsing and rendering the real `/whl/cu130/torch/` page captured from download.pytorch.org
//! (target: at least 100 MB/s of HTML parsed). Reads `../shared/fixtures`; where that is absent
//! the benchmark says so and measures nothing.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use std::hint::black_box;
use wheelgate_resolver::index::{parse_project_html, render_project_html, render_project_json};

const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../shared/fixtures/pytorch-index/whl_cu130_torch.html"
);

fn bench_index_page(c: &mut Criterion) {
    let Ok(html) = std::fs::read_to_string(FIXTURE) else {
        eprintln!("index_page benchmark NOT RUN: {FIXTURE} is absent");
        return;
    };
    let page = parse_project_html(&html).expect("the captured page parses");
    let mut group = c.benchmark_group("cu130 torch page");
    group.throughput(Throughput::BytesDecimal(html.len() as u64));
    group.bench_function("parse HTML", |b| {
        b.iter(|| parse_project_html(black_box(&html)));
    });
    group.bench_function("render HTML", |b| {
        b.iter(|| render_project_html(black_box(&page)));
    });
    group.bench_function("render JSON", |b| {
        b.iter(|| render_project_json(black_box(&page)));
    });
    group.finish();
}

criterion_group!(benches, bench_index_page);
criterion_main!(benches);
