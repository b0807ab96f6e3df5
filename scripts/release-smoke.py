#!/usr/bin/env python3
"""The checks scripts/release runs on what it built, each from a clean start. Standard library only.

  release-smoke.py binary WHEELGATE DIR   the binary serves a page and a file from a fake upstream
                                          (a static PEP 503 index on 127.0.0.1) with the right hash
  release-smoke.py wheel PYTHON WHEEL DIR the wheel installs into a fresh venv of PYTHON, offline;
                                          `wheelgate detect --json` prints a machine and
                                          `import wheelgate; wheelgate.detect()` returns one
  release-smoke.py sdist PYTHON SDIST DIR pip builds the sdist in a fresh venv (maturin from the
                                          configured index) and the same two checks pass

Exits non-zero, saying what failed, on any failure.
"""

import hashlib
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

WHEEL_NAME = "demo-1.0-py3-none-any.whl"


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def get(url, accept="application/vnd.pypi.simple.v1+json"):
    request = urllib.request.Request(url, headers={"Accept": accept})
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(request, timeout=10) as response:
        return response.read()


def wait_until_up(url, process, what):
    for _ in range(200):
        if process.poll() is not None:
            sys.exit(f"{what} exited with {process.returncode}")
        try:
            get(url)
            return
        except OSError:
            time.sleep(0.05)
    sys.exit(f"{what} did not answer {url}")


def binary(wheelgate, directory):
    directory = Path(directory)
    shutil.rmtree(directory, ignore_errors=True)
    project = directory / "upstream" / "simple" / "demo"
    project.mkdir(parents=True)
    body = b"a file any index could list\n" * 1000
    (project / WHEEL_NAME).write_bytes(body)
    sha256 = hashlib.sha256(body).hexdigest()
    (project / "index.html").write_text(
        f'<!DOCTYPE html><html><body><a href="{WHEEL_NAME}#sha256={sha256}">{WHEEL_NAME}</a>'
        "</body></html>\n"
    )
    upstream_port, port = free_port(), free_port()
    upstream = subprocess.Popen(
        [sys.executable, "-m", "http.server", str(upstream_port), "--bind", "127.0.0.1",
         "--directory", str(directory / "upstream")],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    server = subprocess.Popen(
        [wheelgate, "serve", "--listen", f"127.0.0.1:{port}",
         "--pytorch-url", f"http://127.0.0.1:{upstream_port}/whl",
         "--pypi-url", f"http://127.0.0.1:{upstream_port}/simple",
         "--cache-dir", str(directory / "cache")],
        stdout=subprocess.DEVNULL, stderr=open(directory / "wheelgate.log", "wb"),
    )
    try:
        wait_until_up(f"http://127.0.0.1:{upstream_port}/simple/demo/", upstream, "the fake upstream")
        wait_until_up(f"http://127.0.0.1:{port}/healthz", server, "wheelgate")
        page = json.loads(get(f"http://127.0.0.1:{port}/simple/demo/"))
        files = {f["filename"]: f for f in page["files"]}
        if WHEEL_NAME not in files or files[WHEEL_NAME]["hashes"].get("sha256") != sha256:
            sys.exit(f"the page through wheelgate does not list {WHEEL_NAME} with its hash: {page}")
        link = urllib.parse.urljoin(f"http://127.0.0.1:{port}/simple/demo/", files[WHEEL_NAME]["url"])
        if hashlib.sha256(get(link, "*/*")).hexdigest() != sha256:
            sys.exit(f"{link}: the file through wheelgate does not match its hash")
        print(f"served /simple/demo/ and {WHEEL_NAME} (sha256 verified) from a fake upstream")
    finally:
        for process in (server, upstream):
            process.terminate()
            process.wait(timeout=30)


def bin_dir_of(venv):
    return venv / ("Scripts" if os.name == "nt" else "bin")


def installed_checks(venv):
    bin_dir = bin_dir_of(venv)
    detected = json.loads(
        subprocess.run([bin_dir / "wheelgate", "detect", "--json"], check=True,
                       capture_output=True, text=True).stdout
    )
    if not isinstance(detected, dict) or "platform" not in detected:
        sys.exit(f"`wheelgate detect --json` printed no machine: {detected}")
    imported = subprocess.run(
        [bin_dir / "python", "-c",
         "import wheelgate; machine = wheelgate.detect(); print(type(machine).__name__)"],
        check=True, capture_output=True, text=True, cwd=venv,
    ).stdout.strip()
    version = subprocess.run([bin_dir / "wheelgate", "--version"], check=True,
                             capture_output=True, text=True).stdout.strip()
    print(f"{venv.name}: detect --json gave {detected['platform']}; "
          f"wheelgate.detect() gave a {imported}; {version}")


def fresh_venv(python, directory, name):
    venv = Path(directory) / name
    shutil.rmtree(venv, ignore_errors=True)
    subprocess.run([python, "-m", "venv", venv], check=True)
    return venv


def wheel(python, path, directory):
    version = subprocess.run([python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                             check=True, capture_output=True, text=True).stdout.strip()
    venv = fresh_venv(python, directory, f"venv-{version}")
    subprocess.run([bin_dir_of(venv) / "python", "-m", "pip", "install", "--quiet", "--no-index",
                    path], check=True)
    installed_checks(venv)


def sdist(python, path, directory):
    venv = fresh_venv(python, directory, "venv-sdist")
    subprocess.run([bin_dir_of(venv) / "python", "-m", "pip", "install", "--quiet", path],
                   check=True, env=os.environ)
    installed_checks(venv)


def main(argv):
    if len(argv) < 3:
        sys.exit(__doc__)
    command = argv[1]
    if command == "binary" and len(argv) == 4:
        binary(argv[2], argv[3])
    elif command == "wheel" and len(argv) == 5:
        wheel(argv[2], argv[3], argv[4])
    elif command == "sdist" and len(argv) == 5:
        sdist(argv[2], argv[3], argv[4])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
