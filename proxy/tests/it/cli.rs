//! The `wheelgate` binary as a user runs it: `detect`, `select` and `pip-config`, with the
//! machine described through a fake system root and the documented overrides (never the host).

use std::process::{Command, Output};

fn wheelgate(args: &[&str], env: &[(&str, &str)]) -> Output {
    let root = tempfile::tempdir().unwrap();
    let mut command = Command::new(env!("CARGO_BIN_EXE_wheelgate"));
    command
        .args(args)
        .env("WHEELGATE_SYSROOT", root.path())
        .env("WHEELGATE_PLATFORM", "linux-x86_64");
    // Nothing of the host's hardware or configuration may leak into the answer.
    command
        .env("WHEELGATE_PROBE_LIBRARIES", "0")
        .env("WHEELGATE_PROBE_COMMANDS", "0");
    for (name, value) in env {
        command.env(name, value);
    }
    command.output().unwrap()
}

const V100: &[(&str, &str)] = &[
    ("WHEELGATE_CUDA_DRIVER", "580.65.06"),
    ("WHEELGATE_CUDA_ARCH", "7.0"),
];

#[test]
fn select_json_names_backend_version_and_reasons() {
    let output = wheelgate(
        &[
            "select",
            "--json",
            "torch==2.11.0",
            "torchvision==0.24.0",
            "torchaudio",
        ],
        V100,
    );
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let answers: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let answers = answers.as_array().unwrap();
    assert_eq!(answers.len(), 3);
    assert_eq!(answers[0]["project"], "torch");
    assert_eq!(answers[0]["version"], "2.11.0");
    assert_eq!(answers[0]["backend"], "cu126");
    assert_eq!(
        answers[0]["index_url"],
        "https://download.pytorch.org/whl/cu126"
    );
    let reasons = answers[0]["reasons"].as_array().unwrap();
    let cu128 = reasons.iter().find(|r| r["backend"] == "cu128").unwrap();
    assert!(
        cu128["reason"]
            .as_str()
            .unwrap()
            .contains("compute capability 7.0"),
        "{cu128}"
    );
    // torchvision 0.24 is torch 2.9's train: cu129 (newest of CUDA 12) still has Volta code.
    assert_eq!(answers[1]["version"], "0.24.0");
    assert_eq!(answers[1]["backend"], "cu129");
    // Unpinned: the newest confirmed release line.
    assert_eq!(answers[2]["project"], "torchaudio");
    assert!(answers[2]["version"].as_str().unwrap().starts_with("2."));
}

#[test]
fn select_without_gpu_says_why_and_pin_overrides() {
    let output = wheelgate(&["select", "torch==2.9.0"], &[]);
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(
        text.starts_with("torch 2.9.0: cpu  (--index-url https://download.pytorch.org/whl/cpu)"),
        "{text}"
    );
    assert!(
        text.contains("cu130: no NVIDIA GPU on this machine"),
        "{text}"
    );
    let output = wheelgate(
        &["select", "--json", "torch==2.9.0"],
        &[("WHEELGATE_BACKEND", "cu128")],
    );
    let answers: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(answers[0]["backend"], "cu128");
}

#[test]
fn select_rejects_bad_requirements_with_a_clear_error() {
    let output = wheelgate(&["select", "torch==="], &[]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("`torch===` is not a valid requirement")
    );
    let output = wheelgate(&["select", "numpy"], &[]);
    assert_eq!(output.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&output.stderr).contains("`numpy` is not a PyTorch project"));
    let output = wheelgate(
        &["select", "--json", "torch"],
        &[("WHEELGATE_CUDA_DRIVER", "not-a-driver")],
    );
    assert_eq!(output.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("not-a-driver"),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn detect_says_when_overrides_describe_a_machine_that_cannot_exist() {
    let windows_with_rocm = [
        ("WHEELGATE_PLATFORM", "windows-x86_64"),
        ("WHEELGATE_AMD_GFX", "gfx1100"),
    ];
    let output = wheelgate(&["detect", "--json"], &windows_with_rocm);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(
        stderr.contains("cannot use its AMD GPU `gfx1100` through ROCm"),
        "{stderr}"
    );
    // A machine that can exist: nothing said.
    let output = wheelgate(&["detect", "--json"], V100);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("WARN"), "{stderr}");
}

#[test]
fn detect_token_round_trips_and_pip_config_uses_it() {
    let output = wheelgate(&["detect", "--token"], V100);
    assert!(output.status.success());
    let token = String::from_utf8(output.stdout).unwrap().trim().to_string();
    let machine = wheelgate_resolver::token::decode(&token).unwrap();
    let gpus = &machine.nvidia.as_ref().unwrap().gpus;
    assert_eq!(gpus[0].compute_capability.unwrap().to_string(), "7.0");
    let output = wheelgate(&["detect", "--json"], V100);
    let json: wheelgate_resolver::Machine = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(json, machine);

    let output = wheelgate(
        &["pip-config", "--proxy", "http://wheelgate.internal:3141/"],
        V100,
    );
    let text = String::from_utf8(output.stdout).unwrap();
    assert!(
        text.contains(&format!(
            "index-url = http://wheelgate.internal:3141/m/{token}/simple/"
        )),
        "{text}"
    );
    let output = wheelgate(&["pip-config", "--proxy", "wheelgate.internal"], V100);
    assert_eq!(output.status.code(), Some(1));
}

#[test]
fn pip_config_prints_each_installers_configuration_with_the_token() {
    let output = wheelgate(&["detect", "--token"], V100);
    let token = String::from_utf8(output.stdout).unwrap().trim().to_string();
    let index = format!("http://wheelgate.internal:3141/m/{token}/simple/");
    let with_credentials = format!("http://ci:s3cret@wheelgate.internal:3141/m/{token}/simple/");
    for (format, expected) in [
        ("pip", format!("index-url = {with_credentials}")),
        (
            "uv",
            format!("[[tool.uv.index]]\nname = \"wheelgate\"\nurl = \"{index}\"\ndefault = true"),
        ),
        ("uv", "UV_INDEX_WHEELGATE_PASSWORD=s3cret".to_string()),
        (
            "poetry",
            format!("poetry source add --priority=primary wheelgate {index}"),
        ),
        (
            "poetry",
            "poetry config http-basic.wheelgate ci s3cret".to_string(),
        ),
        (
            "pdm",
            "url = \"http://${WHEELGATE_USER}:${WHEELGATE_PASSWORD}@wheelgate.internal:3141/m/"
                .to_string(),
        ),
        ("env", format!("PIP_INDEX_URL={with_credentials}\n")),
        ("env", format!("UV_DEFAULT_INDEX={with_credentials}\n")),
    ] {
        let output = wheelgate(
            &[
                "pip-config",
                "--proxy",
                "http://ci:s3cret@wheelgate.internal:3141",
                "--format",
                format,
            ],
            V100,
        );
        assert!(output.status.success(), "{output:?}");
        let text = String::from_utf8(output.stdout).unwrap();
        assert!(
            text.contains(&expected),
            "--format {format}: `{expected}` missing:\n{text}"
        );
    }
    // An unknown format is a usage error naming the accepted ones; a bad URL never echoes
    // its password.
    let output = wheelgate(
        &[
            "pip-config",
            "--proxy",
            "http://h:3141",
            "--format",
            "conda",
        ],
        V100,
    );
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("conda") && stderr.contains("poetry"),
        "{stderr}"
    );
    let output = wheelgate(&["pip-config", "--proxy", "ftp://ci:s3cret@h"], V100);
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("`ftp://***@h`") && !stderr.contains("s3cret"),
        "{stderr}"
    );
}

/// The captured download.pytorch.org page of torch's cu130 builds (2.9.0 to 2.11.0), read in
/// place from the shared fixtures.
fn cu130_page() -> String {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../shared/fixtures/pytorch-index/whl_cu130_torch.html"
    );
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("fixture `{path}`: {e}"))
}

/// The fixture with a cu128 twin of every file, as the aggregated `/whl/torch/` page lists
/// several backends per version.
fn cu128_and_cu130_page() -> String {
    let page = cu130_page();
    let mut twins = String::new();
    for line in page.lines().filter(|line| line.contains("<a ")) {
        twins.push_str(&line.replace("cu130", "cu128"));
        twins.push('\n');
    }
    page.replacen(
        "<h1>Links for torch</h1>",
        &format!("<h1>Links for torch</h1>\n{twins}"),
        1,
    )
}

fn token_of(env: &[(&str, &str)]) -> String {
    let output = wheelgate(&["detect", "--token"], env);
    assert!(output.status.success());
    String::from_utf8(output.stdout).unwrap().trim().to_string()
}

fn json_answers(output: &Output) -> Vec<serde_json::Value> {
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let answers: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    answers.as_array().unwrap().clone()
}

const A10_DRIVER_570: &[(&str, &str)] = &[
    ("WHEELGATE_CUDA_DRIVER", "570.86.10"),
    ("WHEELGATE_CUDA_ARCH", "8.6"),
];
const H100_DRIVER_580: &[(&str, &str)] = &[
    ("WHEELGATE_CUDA_DRIVER", "580.65.06"),
    ("WHEELGATE_CUDA_ARCH", "9.0"),
];

#[test]
fn select_from_a_saved_page_html_or_json_for_another_machine() {
    let dir = tempfile::tempdir().unwrap();
    let html = dir.path().join("torch.html");
    std::fs::write(&html, cu130_page()).unwrap();
    let html = html.to_str().unwrap();
    // The H100 described by its token: the newest version on the page, its cu130 files.
    let h100 = token_of(H100_DRIVER_580);
    let answers = json_answers(&wheelgate(
        &[
            "select",
            "--json",
            "--index",
            html,
            "--machine",
            &h100,
            "torch",
        ],
        &[],
    ));
    assert_eq!(answers[0]["version"], "2.11.0");
    assert_eq!(answers[0]["backend"], "cu130");
    assert_eq!(answers[0]["page"], html);
    let files: Vec<&str> = answers[0]["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap())
        .collect();
    assert!(files.contains(&"torch-2.11.0+cu130-cp312-cp312-manylinux_2_28_x86_64.whl"));
    assert!(files.iter().all(|f| f.starts_with("torch-2.11.0+cu130-")));

    // The same page as PEP 691 JSON, a pinned version, a V100 described by `detect --json` in a
    // file: the page has only cu130, which has no Volta code, so nothing runs; the catalog
    // alone would have said cu126.
    let parsed = wheelgate_resolver::index::parse_project_html(&cu130_page()).unwrap();
    let json = dir.path().join("torch.json");
    std::fs::write(
        &json,
        wheelgate_resolver::index::render_project_json(&parsed),
    )
    .unwrap();
    let machine = dir.path().join("v100.json");
    std::fs::write(&machine, wheelgate(&["detect", "--json"], V100).stdout).unwrap();
    let answers = json_answers(&wheelgate(
        &[
            "select",
            "--json",
            "--index",
            json.to_str().unwrap(),
            "--machine",
            machine.to_str().unwrap(),
            "torch==2.9.0",
        ],
        &[],
    ));
    assert_eq!(answers[0]["version"], "2.9.0");
    assert_eq!(answers[0]["backend"], serde_json::Value::Null);
    let reasons = answers[0]["reasons"].to_string();
    assert!(reasons.contains("compute capability 7.0"), "{reasons}");
    let answers = json_answers(&wheelgate(
        &[
            "select",
            "--json",
            "--machine",
            machine.to_str().unwrap(),
            "torch==2.9.0",
        ],
        &[],
    ));
    assert_eq!(answers[0]["backend"], "cu129");
    assert_eq!(answers[0].get("page"), None, "without --index: the catalog");

    // Human output names the page and the files.
    let output = wheelgate(
        &[
            "select",
            "--index",
            html,
            "--machine",
            &h100,
            "torch==2.10.0",
        ],
        &[],
    );
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(text.starts_with("torch 2.10.0: cu130"), "{text}");
    assert!(
        text.contains(&format!(
            "from {html}; the files the proxy serves this machine:"
        )),
        "{text}"
    );
}

#[test]
fn select_with_bad_index_or_machine_says_what_is_wrong() {
    let dir = tempfile::tempdir().unwrap();
    let cases: [(Vec<String>, &str); 4] = [
        (
            vec!["--machine".into(), "1-lx-n580-s99.9".into()],
            "is neither a machine file nor a machine token",
        ),
        (
            vec![
                "--index".into(),
                dir.path().join("absent.html").display().to_string(),
            ],
            "could not read the saved page",
        ),
        (
            vec!["--index".into(), {
                let other = dir.path().join("numpy.html");
                std::fs::write(&other, "<h1>Links for numpy</h1>").unwrap();
                other.display().to_string()
            }],
            "lists `numpy`, not `torch`",
        ),
        (
            vec![
                "--index".into(),
                {
                    let page = dir.path().join("torch.html");
                    std::fs::write(&page, cu130_page()).unwrap();
                    page.display().to_string()
                },
                "--machine".into(),
                token_of(H100_DRIVER_580),
            ],
            "no version on",
        ),
    ];
    for (extra, message) in cases {
        let mut args: Vec<&str> = vec!["select"];
        args.extend(extra.iter().map(String::as_str));
        args.push(if message == "no version on" {
            "torch==1.0"
        } else {
            "torch"
        });
        let output = wheelgate(&args, &[]);
        assert_eq!(output.status.code(), Some(1), "{args:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(message), "{args:?}: {stderr}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn select_from_an_index_url_served_by_a_fake_upstream() {
    let upstream = crate::fake_upstream::Fake::start().await;
    upstream.add_page("/whl/torch/", cu128_and_cu130_page());
    let root = upstream.url("/whl/");
    let a10 = token_of(A10_DRIVER_570);
    let h100 = token_of(H100_DRIVER_580);
    let run = |machine: String, requirement: &'static str| {
        let root = root.clone();
        tokio::task::spawn_blocking(move || {
            json_answers(&wheelgate(
                &[
                    "select",
                    "--json",
                    "--index",
                    &root,
                    "--machine",
                    &machine,
                    requirement,
                ],
                &[],
            ))
        })
    };
    // Driver 570 runs CUDA 12 only: cu128, with cu130 rejected for the driver.
    let answers = run(a10, "torch>=2.9,<2.11").await.unwrap();
    assert_eq!(answers[0]["version"], "2.10.0");
    assert_eq!(answers[0]["backend"], "cu128");
    assert_eq!(answers[0]["page"], format!("{root}torch/"));
    assert!(
        answers[0]["reasons"]
            .to_string()
            .contains("driver 570.86.10 is below 580")
    );
    // The same choice on the page's other platforms, said per platform.
    assert_eq!(
        answers[0]["platforms"]["linux-aarch64"], "cu128",
        "{}",
        answers[0]
    );
    assert_eq!(
        answers[0]["platforms"]["windows-x86_64"], "cu128",
        "{}",
        answers[0]
    );
    let answers = run(h100, "torch").await.unwrap();
    assert_eq!(answers[0]["backend"], "cu130");
    assert_eq!(
        answers[0]["platforms"]["linux-aarch64"], "cu130",
        "{}",
        answers[0]
    );
    assert_eq!(upstream.hits("/whl/torch/"), 2);
}

/// An operator's catalog (`[catalog] extend`) that adds torch 2.16 with `cu134`.
const OVERLAY_216: &str = r#"# torch 2.16, before wheelgate knows it
[sm_sets]
cu134_216 = ["7.5", "8.0", "8.6", "9.0", "10.0", "12.0"]

[[release]]
torch = "2.16"
companions = { torchvision = "0.31", torchaudio = "2.16" }
plain = { linux-x86_64 = "cu134", linux-aarch64 = "cu134", windows-x86_64 = "cpu", macos-arm64 = "cpu" }
backends.cpu = {}
backends.cu134 = { sm = "cu134_216" }
"#;

#[test]
fn a_catalog_overlay_adds_a_release_select_and_config_show_use() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("catalog-extra.toml"), OVERLAY_216).unwrap();
    let config = dir.path().join("wheelgate.toml");
    // Relative to the configuration file.
    std::fs::write(&config, "[catalog]\nextend = \"catalog-extra.toml\"\n").unwrap();
    let config = config.to_str().unwrap();

    let answers = json_answers(&wheelgate(
        &["select", "--json", "--config", config, "torch==2.16.0"],
        H100_DRIVER_580,
    ));
    assert_eq!(answers[0]["backend"], "cu134", "{}", answers[0]);
    let notes = answers[0]["notes"].to_string();
    assert!(!notes.contains("not in the catalog"), "{notes}");
    // Without it, 2.16 is inferred from 2.14's rules (and offers no cu134).
    let answers = json_answers(&wheelgate(
        &["select", "--json", "torch==2.16.0"],
        H100_DRIVER_580,
    ));
    assert_ne!(answers[0]["backend"], "cu134");
    assert!(
        answers[0]["notes"]
            .to_string()
            .contains("not in the catalog"),
        "{}",
        answers[0]
    );

    let output = wheelgate(&["config", "show", "--config", config], &[]);
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        text.contains("catalog-extra.toml` layered over it (releases through torch 2.16)"),
        "{text}"
    );
    assert!(text.contains("#   line 6: release 2.16 (added)"), "{text}");
    assert!(
        text.contains("#   line 3: sm_sets `cu134_216` (added)"),
        "{text}"
    );
}

#[test]
fn a_bad_catalog_overlay_names_the_file_line_and_key() {
    let dir = tempfile::tempdir().unwrap();
    let overlay = dir.path().join("catalog-extra.toml");
    std::fs::write(
        &overlay,
        OVERLAY_216.replace("sm = \"cu134_216\"", "sm = \"cu134\""),
    )
    .unwrap();
    let config = dir.path().join("wheelgate.toml");
    std::fs::write(
        &config,
        format!("[catalog]\nextend = \"{}\"\n", overlay.display()),
    )
    .unwrap();
    let output = wheelgate(
        &[
            "select",
            "--config",
            config.to_str().unwrap(),
            "torch==2.16.0",
        ],
        H100_DRIVER_580,
    );
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(&format!("the catalog overlay `{}`", overlay.display()))
            && stderr.contains("line 6, `release 2.16 backends.cu134`")
            && stderr.contains("unknown sm set `cu134`"),
        "{stderr}"
    );
}

#[test]
fn version_names_the_commit_and_build_date() {
    let output = wheelgate(&["--version"], &[]);
    assert!(output.status.success());
    let text = String::from_utf8_lossy(&output.stdout);
    let expected = format!(
        "wheelgate {} (commit {}, built {})\n",
        env!("CARGO_PKG_VERSION"),
        wheelgate_server::build_info::COMMIT,
        wheelgate_server::build_info::BUILD_DATE
    );
    assert_eq!(text, expected);
    // In a git checkout (CI's clean clone, this tree) the commit is known.
    if std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.git")).exists() {
        assert_eq!(wheelgate_server::build_info::COMMIT.len(), 12, "{text}");
    }
    let date = wheelgate_server::build_info::BUILD_DATE;
    assert!(
        date.len() == 10 && date.as_bytes()[4] == b'-' && date.as_bytes()[7] == b'-',
        "{date}"
    );
}
