//! Random and mutated input thrown at every parser of the crate: each must answer with a value
//! or a typed error, never a panic. Mutations start from real inputs (captured pages, published
//! variants.json files, real filenames) so they reach deep into the parsers.

use proptest::prelude::*;
use wheelgate_resolver::filename::{DistFilename, SdistFilename, WheelFilename, WheelParts};
use wheelgate_resolver::index::{
    parse_project_html, parse_project_json, parse_project_list_html, parse_project_list_json,
};
use wheelgate_resolver::machine::{GfxTarget, Machine, Platform};
use wheelgate_resolver::select::{FileRef, select_page};
use wheelgate_resolver::variants::{parse_variant_json, parse_variants_json};
use wheelgate_resolver::{Backend, Catalog, ComputeCapability, CudaVersion, DottedVersion, Policy};

const REAL_NAMES: &[&str] = &[
    "torch-2.10.0+cu130-cp310-cp310-manylinux_2_28_aarch64.whl",
    "torch-2.0.0-1-cp310-cp310-manylinux2014_aarch64.whl",
    "torch-2.9.0-cp313-cp313-manylinux_2_28_x86_64-cuda12.8.whl",
    "numpy-2.3.2-1-cp313-cp313t-musllinux_1_2_x86_64-x86_64_v3.whl",
    "python-dateutil-2.8.2.tar.gz",
    "torch-2.6.0+rocm6.2.4-cp312-cp312-linux_x86_64.whl",
];

const PYPI_JSON: &str = r#"{"meta":{"api-version":"1.1"},"name":"filelock","versions":["3.20.0"],"files":[{"filename":"filelock-3.20.0-py3-none-any.whl","url":"https://files.example/f/filelock-3.20.0-py3-none-any.whl","hashes":{"sha256":"aa"},"requires-python":">=3.9","core-metadata":{"sha256":"bb"},"size":16000,"upload-time":"2025-10-08T18:03:12.000000Z","yanked":false}]}"#;

fn fixture(relative: &str) -> Option<String> {
    let path = format!(
        "{}/../../shared/fixtures/{relative}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(path).ok()
}

/// Real inputs to mutate: captured fixtures where present, plus inputs this file carries.
fn seeds() -> Vec<String> {
    let mut seeds: Vec<String> = REAL_NAMES.iter().map(ToString::to_string).collect();
    seeds.push(PYPI_JSON.to_string());
    seeds.push(wheelgate_resolver::catalog::EMBEDDED_CATALOG.to_string());
    seeds.push(r#"{"platform":"linux-x86_64","glibc":"2.36","nvidia":{"driver_version":"580.65.06","cuda_version":"13.0","gpus":[{"compute_capability":"9.0"}]},"amd":{"gpus":[{"gfx":"gfx1100"}]}}"#.to_string());
    for name in [
        "pytorch-index/whl_cu130_torch.html",
        "pytorch-index/whl.html",
        "variants-json/torch-2.10.0-variants.json",
        "variants-json/torch-2.8.0-variants.json",
    ] {
        match fixture(name) {
            Some(text) => seeds.push(text),
            None => eprintln!("fixture {name} absent: mutations of it NOT RUN"),
        }
    }
    seeds
}

/// Every parser of the crate on one input; returning at all is the property.
fn parse_everything(input: &str) {
    let _ = input.parse::<WheelFilename>();
    let _ = WheelParts::split(input);
    let _ = input.parse::<SdistFilename>();
    let _ = input.parse::<DistFilename>();
    let _ = input.parse::<Backend>();
    let _ = Backend::from_variant_label(input);
    let _ = input.parse::<DottedVersion>();
    let _ = input.parse::<CudaVersion>();
    let _ = input.parse::<ComputeCapability>();
    let _ = ComputeCapability::from_sm_digits(input);
    let _ = input.parse::<GfxTarget>();
    let _ = input.parse::<Platform>();
    let _ = serde_json::from_str::<Machine>(input);
    let _ = Catalog::from_toml(input);
    let _ = parse_project_html(input);
    let _ = parse_project_list_html(input);
    let _ = parse_project_json(input);
    let _ = parse_project_list_json(input);
    let _ = parse_variants_json(input);
    let _ = parse_variant_json(input);
    let machine = Machine::cpu_only("linux-x86_64".parse().unwrap());
    let files = [FileRef {
        filename: input,
        url: input,
    }];
    let _ = select_page(
        Catalog::embedded(),
        &machine,
        &Policy::default(),
        input,
        &files,
    );
}

/// Applies one byte-level mutation, keeping the result valid UTF-8 (lossily).
fn mutate(seed: &str, position: usize, kind: u8, byte: u8) -> String {
    let mut bytes = seed.as_bytes().to_vec();
    if bytes.is_empty() {
        return String::from_utf8_lossy(&[byte]).into_owned();
    }
    let at = position % bytes.len();
    match kind % 5 {
        0 => bytes[at] = byte,
        1 => {
            bytes.remove(at);
        }
        2 => bytes.insert(at, byte),
        3 => bytes.truncate(at),
        _ => {
            let end = (at + 64).min(bytes.len());
            let chunk = bytes[at..end].to_vec();
            bytes.splice(at..at, chunk);
        }
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn random_text_never_panics(input in "\\PC{0,200}") {
        parse_everything(&input);
    }

    #[test]
    fn filename_shaped_text_never_panics(input in "[a-z0-9_.+-]{0,20}-[0-9.+a-z]{0,12}(-[0-9a-z_.]{0,8}){0,6}(\\.whl|\\.tar\\.gz|\\.zip)?") {
        parse_everything(&input);
    }

    #[test]
    fn mutated_real_input_never_panics(seed_index in 0usize..64, mutations in prop::collection::vec((any::<usize>(), any::<u8>(), any::<u8>()), 1..8)) {
        let seeds = seeds();
        let mut input = seeds[seed_index % seeds.len()].clone();
        for (position, kind, byte) in mutations {
            input = mutate(&input, position, kind, byte);
        }
        parse_everything(&input);
    }
}
