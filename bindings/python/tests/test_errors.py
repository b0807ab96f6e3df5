"""Bad input raises a clear Python exception; a Rust panic becomes one too."""

import subprocess
import sys

import pytest

import wheelgate

CPU = '{"platform":"linux-x86_64"}'


@pytest.mark.parametrize("token", ["", "garbage!!", "1-zz", "1-lx-n" + "9" * 400, "1-lx-s99.99x"])
def test_garbage_tokens(token):
    with pytest.raises(wheelgate.MachineError, match="not a machine token"):
        wheelgate.Machine.from_token(token)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "[]",
        '{"platform":"linux-pdp11"}',
        '{"platform":"linux-x86_64","nvidia":{"driver_version":"five","gpus":[]}}',
        '{"platform":"linux-x86_64","nvidia":{"gpus":[{"compute_capability":"-1.0"}]}}',
        '{"platform":"linux-x86_64","amd":{"gpus":[{"gfx":"gfx"}]}}',
    ],
)
def test_machine_json_with_impossible_facts(text):
    with pytest.raises(wheelgate.MachineError, match="not a `wheelgate detect --json` machine"):
        wheelgate.Machine.from_json(text)


def test_an_invalid_override_names_it(monkeypatch):
    monkeypatch.setenv("WHEELGATE_CUDA_DRIVER", "not-a-version")
    with pytest.raises(wheelgate.MachineError, match="WHEELGATE_CUDA_DRIVER"):
        wheelgate.detect()


@pytest.mark.parametrize(
    ("requirement", "message"),
    [
        ("torch>>2", "not a valid requirement"),
        ("numpy", "not a PyTorch project"),
        ("torch==1.0.0a0; python_version >", "not a valid requirement"),
    ],
)
def test_unparseable_requirements(requirement, message):
    with pytest.raises(wheelgate.RequirementError, match=message):
        wheelgate.select(requirement, machine=wheelgate.Machine.from_json(CPU))


def test_unreadable_pages(tmp_path):
    machine = wheelgate.Machine.from_json(CPU)
    page = tmp_path / "torch.html"
    page.write_bytes(b"\xff\xfe<a href=")
    with pytest.raises(wheelgate.PageError, match="valid UTF-8"):
        wheelgate.select("torch", machine=machine, index=str(page))
    page = tmp_path / "torch.json"
    page.write_text('{"files": 3}')
    with pytest.raises(wheelgate.PageError, match="project page has `files` as a number, not a list"):
        wheelgate.select("torch", machine=machine, index=str(page))
    page.write_text('{"files": [')
    with pytest.raises(wheelgate.PageError, match="invalid PEP 691 JSON project page"):
        wheelgate.select("torch", machine=machine, index=str(page))
    with pytest.raises(wheelgate.PageError, match="no `url`"):
        wheelgate.choose("torch", [{"filename": "torch-2.9.0-py3-none-any.whl"}])


@pytest.mark.parametrize(
    "call",
    [
        lambda: wheelgate.Machine.from_token(42),
        lambda: wheelgate.select(42),
        lambda: wheelgate.select([b"torch"]),
        lambda: wheelgate.select("torch", machine="1-lx"),
        lambda: wheelgate.choose("torch", [3.5]),
        lambda: wheelgate.choose("torch", [{"filename": 1, "url": "x"}]),
        lambda: wheelgate.choose(None, []),
    ],
)
def test_non_string_arguments_raise_type_error(call):
    with pytest.raises(TypeError):
        call()


def test_a_panic_becomes_an_exception_and_the_interpreter_lives_on():
    with pytest.raises(wheelgate.InternalError, match="boom"):
        wheelgate._wheelgate._test_panic("boom")
    # Still usable after the panic.
    assert wheelgate.Machine.from_json(CPU).platform == "linux-x86_64"
    # `except Exception` catches it (pyo3's own PanicException is a BaseException).
    assert issubclass(wheelgate.InternalError, Exception)


def test_a_panic_in_a_child_interpreter_exits_cleanly():
    code = "import wheelgate\ntry:\n    wheelgate._wheelgate._test_panic('x')\nexcept wheelgate.WheelgateError:\n    print('caught')\n"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout == "caught\n"


@pytest.mark.parametrize(
    ("make", "text", "fact"),
    [
        (wheelgate.Machine.from_json, '{"platform":"macos-arm64","nvidia":{"gpus":[{"compute_capability":"9.0"}]}}',
         "a `macos-arm64` machine cannot have NVIDIA GPUs"),
        (wheelgate.Machine.from_token, "1-wx-m-k1100", "a `windows-x86_64` machine cannot use its AMD GPU `gfx1100`"),
        (wheelgate.Machine.from_token, "1-lx-n580.65.06-s2.1", "compute capability `2.1`"),
    ],
)
def test_machines_that_cannot_exist(make, text, fact):
    with pytest.raises(wheelgate.MachineError, match="describes a machine that cannot exist") as raised:
        make(text)
    assert fact in str(raised.value)


def test_a_doubtful_machine_warns_and_is_used():
    with pytest.warns(UserWarning, match="`gfx9999`"):
        machine = wheelgate.Machine.from_token("1-lx-m-k9999")
    assert machine.platform == "linux-x86_64"
