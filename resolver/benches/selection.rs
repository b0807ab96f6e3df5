//! Full selection over a 2,000-file project page (target: under 1 ms), and the same over the
//! real captured `/whl/cu130/torch/` file list when `../shared/fixtures` is present.

use criterion::{Criterion, criterion_group, criterion_main};
use std::hint::black_box;
use wheelgate_resolver::select::{FileRef, select_page};
use wheelgate_resolver::{Catalog, Machine, Policy};

/// A torch page shaped like download.pytorch.org's aggregated `/whl/torch/`: 20 versions, each
/// published for 6 backends on 3 platforms for 5 Pythons, plus macOS wheels: 2,000 files.
fn synthetic_page() -> Vec<(String, String)> {
    let versions = [
        "2.13.0", "2.12.1", "2.12.0", "2.11.0", "2.10.1", "2.10.0", "2.9.1", "2.9.0", "2.8.0",
        "2.7.1", "2.7.0", "2.6.0", "2.5.1", "2.5.0", "2.4.1", "2.4.0", "2.3.1", "2.3.0", "2.2.2",
        "2.2.1",
    ];
    let backends = ["cpu", "cu126", "cu128", "cu130", "rocm6.4", "xpu"];
    let platforms = [
        "manylinux_2_28_x86_64",
        "manylinux_2_28_aarch64",
        "win_amd64",
    ];
    let pythons = ["cp310", "cp311", "cp312", "cp313", "cp314"];
    let mut files = Vec::new();
    for version in versions {
        for backend in backends {
            for platform in platforms {
                for python in pythons {
                    let name =
                        format!("torch-{version}+{backend}-{python}-{python}-{platform}.whl");
                    let url = format!(
                        "/whl/{backend}/{}#sha256={}",
                        name.replace('+', "%2B"),
                        "0".repeat(64)
                    );
                    files.push((name, url));
                }
            }
        }
        for python in pythons {
            for mac in ["macosx_11_0_arm64", "macosx_10_13_x86_64"] {
                let name = format!("torch-{version}-{python}-none-{mac}.whl");
                files.push((name.clone(), format!("/whl/cpu/{name}")));
            }
        }
    }
    files
}

fn bench_selection(c: &mut Criterion) {
    let machine: Machine = serde_json::from_str(
        r#"{"platform":"linux-x86_64","glibc":"2.36","nvidia":{"driver_version":"580.65.06","gpus":[{"compute_capability":"9.0"},{"compute_capability":"8.0"}]}}"#,
    )
    .unwrap();
    let catalog = Catalog::embedded();
    let policy = Policy::default();
    let files = synthetic_page();
    assert_eq!(files.len(), 2000);
    let refs: Vec<FileRef<'_>> = files
        .iter()
        .map(|(filename, url)| FileRef { filename, url })
        .collect();
    c.bench_function("select_page/2000 files", |b| {
        b.iter(|| select_page(catalog, &machine, &policy, "torch", black_box(&refs)));
    });
}

criterion_group!(benches, bench_selection);
criterion_main!(benches);
