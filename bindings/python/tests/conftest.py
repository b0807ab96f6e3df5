"""Shared fixtures of the wheelgate package's tests: the repository's captured machines, the
real and generated index pages, and an environment with no host facts leaking in.

Run by scripts/python-test against the installed wheel, never against the source tree.
"""

import os
import pathlib

import pytest

REPO = pathlib.Path(__file__).resolve().parents[3]
MACHINES = REPO / "selectors" / "tests" / "machines"
FIXTURES = pathlib.Path(os.environ.get("WHEELGATE_FIXTURES", REPO.parent / "shared" / "fixtures"))


@pytest.fixture(autouse=True)
def no_host_facts(monkeypatch):
    """No test reads this host's hardware: overrides and sysroots only, no GPU library or command."""
    for name in list(os.environ):
        if name.startswith("WHEELGATE_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("WHEELGATE_PROBE_LIBRARIES", "0")
    monkeypatch.setenv("WHEELGATE_PROBE_COMMANDS", "0")


def machine_dirs():
    """Every captured machine (a sysroot under `root/` and its `expect.toml`)."""
    return sorted(path for path in MACHINES.iterdir() if (path / "expect.toml").is_file())


@pytest.fixture
def fixtures_dir():
    """The shared captured pages, which the repository's tests read in place."""
    if not FIXTURES.is_dir():
        pytest.skip(f"no shared fixtures at {FIXTURES}")
    return FIXTURES


@pytest.fixture(scope="session")
def generated_page():
    """The generated real-size `/whl/torch/` page (wheelgate-testdata), written by scripts/python-test."""
    path = os.environ.get("WHEELGATE_TORCH_PAGE")
    if not path:
        pytest.skip("WHEELGATE_TORCH_PAGE is not set (scripts/python-test sets it)")
    return pathlib.Path(path)
