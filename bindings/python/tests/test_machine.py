"""`wheelgate.detect()` and `wheelgate.Machine` on the captured machines and on overrides."""

import json

try:
    import tomllib
except ModuleNotFoundError:  # Python < 3.11: the same parser, from PyPI
    import tomli as tomllib

import pytest

import wheelgate

from conftest import machine_dirs


@pytest.mark.parametrize("directory", machine_dirs(), ids=lambda d: d.name)
def test_detect_describes_every_captured_machine(directory, monkeypatch):
    expect = tomllib.loads((directory / "expect.toml").read_text())
    for name, value in expect.get("env", {}).items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("WHEELGATE_SYSROOT", str(directory / "root"))
    # Commands run from the captured tree (its fake `nvidia-smi`), as in the selectors' own test.
    monkeypatch.delenv("WHEELGATE_PROBE_COMMANDS")

    machine = wheelgate.detect()

    assert machine == wheelgate.Machine.from_json(json.dumps(expect["machine"]))
    assert wheelgate.Machine.from_token(machine.token) == machine
    assert wheelgate.Machine.from_json(machine.to_json()) == machine
    for release, backend in expect["choice"].items():
        (choice,) = wheelgate.select(f"torch=={release}.0", machine=machine)
        assert choice.backend == backend, (release, choice.reasons)


def test_sysroot_argument_is_the_variable():
    directory = machine_dirs()[0]
    assert wheelgate.detect(directory / "root") == wheelgate.detect(str(directory / "root"))


def test_overrides_describe_a_gpu_machine(monkeypatch):
    monkeypatch.setenv("WHEELGATE_PLATFORM", "linux-x86_64")
    monkeypatch.setenv("WHEELGATE_CUDA_DRIVER", "580.65.06")
    monkeypatch.setenv("WHEELGATE_CUDA_ARCH", "9.0,8.6")
    monkeypatch.setenv("WHEELGATE_GLIBC", "2.39")

    machine = wheelgate.detect()

    assert (machine.platform, machine.os, machine.arch) == ("linux-x86_64", "linux", "x86_64")
    assert machine.glibc == "2.39"
    assert machine.nvidia_driver == "580.65.06"
    assert [(g.vendor, g.architecture) for g in machine.gpus] == [("nvidia", "9.0"), ("nvidia", "8.6")]
    assert machine.token.startswith("1-lx")
    assert "linux-x86_64" in repr(machine)


def test_amd_and_intel_gpus_are_attributes(monkeypatch):
    monkeypatch.setenv("WHEELGATE_PLATFORM", "linux-x86_64")
    monkeypatch.setenv("WHEELGATE_AMD_GFX", "gfx942")
    monkeypatch.setenv("WHEELGATE_ROCM_VERSION", "6.4.1")

    machine = wheelgate.detect()

    assert [(g.vendor, g.architecture) for g in machine.gpus] == [("amd", "gfx942")]
    assert machine.rocm_version == "6.4.1"
    assert machine.nvidia_driver is None and machine.cuda_version is None


def test_a_token_round_trips_without_probing():
    machine = wheelgate.Machine.from_json(
        '{"platform":"windows-amd64","nvidia":{"driver_version":"572.16","gpus":[{"compute_capability":"12.0"}]}}'
    )
    again = wheelgate.Machine.from_token(machine.token)
    assert again == machine
    # The platform is named by its architecture, whatever alias it was given in.
    assert again.platform == "windows-x86_64"
    assert json.loads(again.to_json())["nvidia"]["driver_version"] == "572.16"
