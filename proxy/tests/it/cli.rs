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
