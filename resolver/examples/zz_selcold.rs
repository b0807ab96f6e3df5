use wheelgate_resolver::select::{FileRef, select_page};
use wheelgate_resolver::{Catalog, Machine, Policy};
fn flt() -> u64 {
    let s = std::fs::read_to_string("/proc/self/stat").unwrap();
    s.rsplit(") ")
        .next()
        .unwrap()
        .split(' ')
        .nth(7)
        .unwrap()
        .parse()
        .unwrap()
}
fn main() {
    let h100: Machine = serde_json::from_str(r#"{"platform":"linux-x86_64","glibc":"2.36","nvidia":{"driver_version":"580.65.06","gpus":[{"compute_capability":"9.0"}]}}"#).unwrap();
    let files = wheelgate_testdata::torch_files();
    let hrefs: Vec<String> = files
        .iter()
        .map(wheelgate_testdata::PageFile::href)
        .collect();
    let refs: Vec<FileRef<'_>> = files
        .iter()
        .zip(&hrefs)
        .map(|(f, u)| FileRef {
            filename: &f.filename,
            url: u,
        })
        .collect();
    let cat = Catalog::embedded();
    let f0 = flt();
    let t = std::time::Instant::now();
    std::hint::black_box(select_page(cat, &h100, &Policy::default(), "torch", &refs));
    let first = t.elapsed();
    let f1 = flt();
    let t = std::time::Instant::now();
    std::hint::black_box(select_page(cat, &h100, &Policy::default(), "torch", &refs));
    let second = t.elapsed();
    let f2 = flt();
    let mut v = vec![];
    let n: usize = std::env::var("N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(50);
    for _ in 0..n {
        let t = std::time::Instant::now();
        std::hint::black_box(select_page(cat, &h100, &Policy::default(), "torch", &refs));
        v.push(t.elapsed());
    }
    v.sort();
    println!(
        "first {first:?} ({} flt) second {second:?} ({} flt) warm median {:?}",
        f1 - f0,
        f2 - f1,
        v[v.len() / 2]
    );
}
