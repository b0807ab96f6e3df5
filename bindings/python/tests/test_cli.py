"""The `wheelgate` console script: the Rust binary's command line, same output and exit codes."""

import os
import subprocess
import sys
import sysconfig

import pytest

from conftest import machine_dirs

SCRIPT = sysconfig.get_path("scripts") + "/wheelgate"
BINARY = os.environ.get("WHEELGATE_BINARY")


def run(command, *args):
    return subprocess.run([*command, *args], capture_output=True, text=True)


@pytest.fixture
def binary():
    if not BINARY:
        pytest.skip("WHEELGATE_BINARY is not set (scripts/python-test sets it)")
    return [BINARY]


@pytest.mark.parametrize(
    "args",
    [
        ["detect"],
        ["detect", "--json", "--sources"],
        ["detect", "--token"],
        ["select", "torch==2.9.0", "torchvision"],
        ["select", "--json", "--machine", "1-lx-n580.65.06-s9.0", "torch"],
        ["pip-config", "--proxy", "http://wheelgate.internal:8080"],
        ["select", "numpy"],
        ["detect", "--no-such-flag"],
        ["--help"],
    ],
    ids=lambda a: " ".join(a),
)
def test_same_output_and_exit_code_as_the_binary(binary, args, monkeypatch):
    monkeypatch.setenv("WHEELGATE_SYSROOT", str(machine_dirs()[0] / "root"))
    script, rust = run([SCRIPT], *args), run(binary, *args)
    assert (script.returncode, script.stdout, script.stderr) == (rust.returncode, rust.stdout, rust.stderr)


def test_detect_token_and_module_entry_point(monkeypatch):
    monkeypatch.setenv("WHEELGATE_PLATFORM", "linux-aarch64")
    script = run([SCRIPT], "detect", "--token")
    module = run([sys.executable, "-m", "wheelgate"], "detect", "--token")
    assert script.returncode == 0, script.stderr
    assert script.stdout.startswith("1-la") and module.stdout == script.stdout


def test_usage_errors_exit_2_and_failures_exit_1():
    assert run([SCRIPT], "no-such-command").returncode == 2
    failed = run([SCRIPT], "select", "--machine", "garbage!!", "torch")
    assert failed.returncode == 1
    assert "neither a machine file nor a machine token" in failed.stderr
