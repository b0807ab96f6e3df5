"""`wheelgate.choose()` over an installer's own candidate list: the real cu130 torch page and
the generated real-size `/whl/torch/` page, checked against `wheelgate select --index` (the
command line's view of the proxy's selection)."""

import json
import subprocess
import sys
import sysconfig

import pytest

import wheelgate

from pages import files_of

H100 = '{"platform":"linux-x86_64","nvidia":{"driver_version":"580.65.06","gpus":[{"compute_capability":"9.0"}]}}'
CPU = '{"platform":"linux-x86_64","glibc":"2.39"}'
WHEELGATE = [sysconfig.get_path("scripts") + "/wheelgate"]


def cli_files(page, machine, requirement):
    """The files `wheelgate select --index PAGE --machine TOKEN --json` says the proxy serves."""
    out = subprocess.run(
        [*WHEELGATE, "select", "--json", "--index", str(page), "--machine", machine.token, requirement],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    (answer,) = json.loads(out)
    return answer["version"], answer["backend"], answer["files"]


def test_the_real_cu130_page_keeps_the_h100_files_in_the_form_given(fixtures_dir):
    page = fixtures_dir / "pytorch-index" / "whl_cu130_torch.html"
    files = files_of(page.read_text())
    machine = wheelgate.Machine.from_json(H100)

    chosen = wheelgate.choose("torch", files, machine=machine)

    assert chosen.files, "an H100 on driver 580 runs cu130"
    assert all(entry in files for entry in chosen.files)
    assert all(type(entry) is dict for entry in chosen.files)
    assert {e["filename"] for e in chosen.files} == {f for v in chosen.versions for f in v.kept}
    # Every platform's cu130 wheels stay (the installer picks its own tag among them).
    newest = chosen.versions[0]
    assert newest.kept and all("+cu130-" in f for f in newest.kept)
    assert chosen.versions[0].backend == "cu130"
    # Every file is either kept or dropped with a reason.
    assert len(chosen.files) + len(chosen.dropped) == len(files)
    assert all(reason for _, reason in chosen.dropped)
    for version in chosen.versions:
        assert version.builds[0].verdict == ("chosen" if version.backend else "rejected")


def test_a_cpu_machine_keeps_cu130_as_a_cpu_build_of_last_resort_and_says_why(fixtures_dir):
    files = files_of((fixtures_dir / "pytorch-index" / "whl_cu130_torch.html").read_text())

    chosen = wheelgate.choose("torch", files, machine=wheelgate.Machine.from_json(CPU))

    # A CUDA build runs on a machine without an NVIDIA GPU, on its CPU: with no CPU build on
    # the page, it is kept rather than nothing, and the explanation says why.
    assert chosen.files, "a page of GPU builds only must not empty on a CPU machine"
    # (The page's older versions are aarch64-only CPU wheels: nothing for this machine.)
    built = [v for v in chosen.versions if any(b.backend == "cu130" for b in v.builds)]
    assert len(built) >= 4, "2.9.0 to 2.11.0 are built for cu130"
    for version in built:
        assert version.backend == "cu130", version
        assert any("CPU build of last resort" in note for note in version.notes), version.notes


@pytest.mark.parametrize("machine_json", [H100, CPU], ids=["h100", "cpu"])
def test_the_generated_page_matches_what_the_proxy_serves(generated_page, machine_json):
    files = files_of(generated_page.read_text())
    machine = wheelgate.Machine.from_json(machine_json)

    chosen = wheelgate.choose("torch", files, machine=machine)
    names = [f["filename"] for f in files]
    as_names = wheelgate.choose("torch", names, machine=machine)

    assert len(files) > 1000, "the generated page is real-size"
    assert len({v.version for v in chosen.versions}) == len(chosen.versions)
    for newest in [v for v in chosen.versions if not any(c.isalpha() for c in v.version)][:3]:
        version, backend, served = cli_files(generated_page, machine, f"torch=={newest.version}")
        assert (version, backend) == (newest.version, newest.backend)
        assert sorted(newest.kept) == sorted(served)
    # Bare filenames carry no directory, only their label: the same choice for current
    # releases (old ones differ where a directory names a build its label does not).
    assert [v.backend for v in as_names.versions[:5]] == [v.backend for v in chosen.versions[:5]]
    assert all(isinstance(name, str) for name in as_names.files)
    assert set(as_names.files) <= set(names)


def test_an_unparseable_name_is_dropped_with_its_reason():
    files = ["torch-2.9.0+cpu-cp312-cp312-manylinux_2_28_x86_64.whl", "not a wheel.whl"]

    chosen = wheelgate.choose("torch", files, machine=wheelgate.Machine.from_json(CPU))

    assert chosen.files == files[:1]
    (dropped,) = chosen.dropped
    assert dropped[0] == "not a wheel.whl" and dropped[1]


H100_DRIVER_570 = '{"platform":"linux-x86_64","nvidia":{"driver_version":"570.86.10","gpus":[{"compute_capability":"9.0"}]}}'
LINUX = "py3-none-manylinux_2_28_x86_64.whl"
TORCH_FILES = [f"torch-{v}-{LINUX}" for v in ("2.9.0+cpu", "2.9.0+cu128", "2.9.0+cu129", "2.9.0+cu130", "2.8.0+cu128", "2.8.0+cu129")]
XFORMERS_FILES = [f"xformers-{v}-{LINUX}" for v in ("0.0.33+cu128", "0.0.33+cu130", "0.0.32+cu128", "0.0.32+cu129")]


def xformers_metadata(filename):
    """What the installer read: 0.0.33 is built against torch 2.9.0, 0.0.32 against 2.8.0."""
    version = filename.split("-")[1]
    torch = "2.9.0" if version.startswith("0.0.33") else "2.8.0"
    return f"Metadata-Version: 2.1\nName: xformers\nVersion: {version}\nRequires-Dist: torch=={torch}\n\n"


def test_a_project_built_against_torch_follows_torchs_build():
    machine = wheelgate.Machine.from_json(H100_DRIVER_570)
    asked = []

    def metadata(filename):
        asked.append(filename)
        return xformers_metadata(filename)

    chosen = wheelgate.choose("xformers", XFORMERS_FILES, machine=machine, torch=TORCH_FILES, metadata=metadata)

    # torch 2.9.0 gets cu129 under driver 570: 0.0.33 has no cu129 build, so it is left out and
    # 0.0.32 +cu129 (built against torch 2.8.0, which gets cu129) is what stays.
    assert chosen.files == ["xformers-0.0.32+cu129-" + LINUX]
    newest = chosen.versions[0]
    assert newest.version == "0.0.33" and newest.backend is None and not newest.kept
    assert any("which gets cu129 on this machine" in note for note in newest.notes), newest.notes
    # Builds are read in each version's order until one settles it: 0.0.32's cu128 build,
    # behind its cu129 build that torch 2.8.0 gets, is never read.
    assert "xformers-0.0.32+cu129-" + LINUX in asked
    assert "xformers-0.0.32+cu128-" + LINUX not in asked
    assert len(asked) == len(set(asked))
    # Without torch's candidates nothing is bound: the machine's own choice (cu128) stands.
    unbound = wheelgate.choose("xformers", XFORMERS_FILES, machine=machine)
    assert unbound.versions[0].backend == "cu128"


def test_binding_takes_metadata_as_a_mapping_and_says_what_is_missing():
    machine = wheelgate.Machine.from_json(H100_DRIVER_570)
    given = {name: xformers_metadata(name).encode() for name in XFORMERS_FILES if "0.0.33" not in name}

    chosen = wheelgate.choose("xformers", XFORMERS_FILES, machine=machine, torch=TORCH_FILES, metadata=given)

    assert chosen.files == ["xformers-0.0.32+cu129-" + LINUX]
    assert any("has none for it" in note for note in chosen.versions[0].notes)
    with pytest.raises(TypeError, match="without `metadata`"):
        wheelgate.choose("xformers", XFORMERS_FILES, machine=machine, torch=TORCH_FILES)
    with pytest.raises(TypeError, match="mapping or a callable"):
        wheelgate.choose("xformers", XFORMERS_FILES, machine=machine, torch=TORCH_FILES, metadata=3)


def test_each_platform_keeps_its_own_build_and_says_which():
    # torch 2.9.0 as PyPI publishes it: unlabelled wheels, a CUDA build on Linux x86_64 and CPU
    # builds elsewhere. A machine without a GPU keeps every platform's wheel: the x86_64 one as a
    # CPU build of last resort, the others as what runs there.
    files = [
        "torch-2.9.0-cp312-cp312-manylinux_2_28_x86_64.whl",
        "torch-2.9.0-cp312-cp312-manylinux_2_28_aarch64.whl",
        "torch-2.9.0-cp312-cp312-win_amd64.whl",
        "torch-2.9.0-cp312-none-macosx_11_0_arm64.whl",
    ]

    chosen = wheelgate.choose("torch", files, machine=wheelgate.Machine.from_json(CPU))

    assert chosen.files == files
    (version,) = chosen.versions
    assert version.backend == "cu128"
    assert version.platforms == {
        "linux-aarch64": "cpu",
        "macos-arm64": "cpu",
        "windows-x86_64": "cpu",
    }
