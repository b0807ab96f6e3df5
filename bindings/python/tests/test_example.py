"""examples/pip_install.py, run as a reader would: it chooses the build with wheelgate and pip
installs it, from a fake index on 127.0.0.1 serving a PEP 691 page and two tiny real wheels."""

import base64
import hashlib
import http.server
import io
import json
import subprocess
import sys
import threading
import urllib.parse
import zipfile

import pytest

from conftest import REPO

EXAMPLE = REPO / "examples" / "pip_install.py"
BUILDS = ["cpu", "cu130"]


def tiny_wheel(build: str) -> tuple[str, bytes]:
    """A real, installable `torch` wheel whose module says which build it is."""
    name = f"torch-2.9.0+{build}-py3-none-any.whl"
    dist_info = f"torch-2.9.0+{build}.dist-info"
    files = {
        "torch/__init__.py": f'BUILD = "{build}"\n',
        f"{dist_info}/METADATA": f"Metadata-Version: 2.1\nName: torch\nVersion: 2.9.0+{build}\n",
        f"{dist_info}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = []
    for path, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(text.encode())}")
    files[f"{dist_info}/RECORD"] = "\n".join([*record, f"{dist_info}/RECORD,,"]) + "\n"
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for path, text in files.items():
            archive.writestr(path, text)
    return name, buffer.getvalue()


@pytest.fixture
def index():
    """A PEP 691 index at http://127.0.0.1:<port>/whl with a cpu and a cu130 build of torch 2.9.0."""
    wheels = {f"/whl/{build}/{urllib.parse.quote(name)}": body for build in BUILDS for name, body in [tiny_wheel(build)]}
    page = {
        "meta": {"api-version": "1.1"},
        "name": "torch",
        "files": [
            {
                "filename": urllib.parse.unquote(path.rsplit("/", 1)[1]),
                "url": path,
                "hashes": {"sha256": hashlib.sha256(body).hexdigest()},
            }
            for path, body in wheels.items()
        ],
    }

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            if self.path == "/whl/torch/":
                body, kind = json.dumps(page).encode(), "application/vnd.pypi.simple.v1+json"
            elif self.path in wheels:
                body, kind = wheels[self.path], "application/octet-stream"
            else:
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}/whl"
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize(
    ("overrides", "build"),
    [
        ({"WHEELGATE_PLATFORM": "linux-x86_64"}, "cpu"),
        ({"WHEELGATE_PLATFORM": "linux-x86_64", "WHEELGATE_CUDA_DRIVER": "580.65.06", "WHEELGATE_CUDA_ARCH": "9.0"}, "cu130"),
    ],
    ids=["cpu-machine", "h100-machine"],
)
def test_the_example_installs_this_machines_build(index, overrides, build, tmp_path, monkeypatch):
    for name, value in overrides.items():
        monkeypatch.setenv(name, value)
    site = tmp_path / "site"
    pip = ["--no-index", "--no-deps", "--quiet", "--target", str(site)]

    run = subprocess.run(
        [sys.executable, str(EXAMPLE), "--index", index, "torch==2.9.0", "--", *pip],
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert run.returncode == 0, run.stdout + run.stderr
    assert f"torch==2.9.0: {build} from " in run.stdout
    assert (site / "torch" / "__init__.py").read_text() == f'BUILD = "{build}"\n'
