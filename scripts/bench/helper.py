#!/usr/bin/env python3
"""Small pieces of scripts/bench-proxy that are awkward in bash. Standard library only.

  helper.py ports N                      N free TCP ports on 127.0.0.1, one a line
  helper.py upstream DIR NAME=SHA256...  the fake download.pytorch.org tree under DIR
  helper.py devpi-mirror URL PASSWORD INDEX MIRROR_URL
                                         log in to devpi-server as root, create INDEX as a
                                         mirror of MIRROR_URL
  helper.py wrk FILE...                  `req/s p50_ms p99_ms errors` from `wrk --latency` output;
                                         of several runs, the median of each and every error
  helper.py link PAGE FILENAME           the URL a PEP 691 JSON page gives for FILENAME
  helper.py pypi-torch DIR BASE          PyPI's torch page (PEP 503 HTML) under DIR/simple/torch/,
                                         files linked on BASE; prints its number of links
"""

import base64
import hashlib
import json
import statistics
import os
import random
import re
import socket
import sys
import urllib.request

# download.pytorch.org's aggregated `/whl/torch/` page for 2.8.0 and 2.9.0, about the size of the
# real `/whl/cu130/torch/` page (182 links, shared/fixtures/pytorch-index/whl_cu130_torch.html):
# per version, the backends it was built for and the platforms each backend ships.
LINUX_X86 = "manylinux_2_28_x86_64"
LINUX_ARM = "manylinux_2_28_aarch64"
WINDOWS = "win_amd64"
RELEASES = {
    "2.9.0": {
        "pythons": ["cp310", "cp311", "cp312", "cp313", "cp313t", "cp314"],
        "backends": {
            "cpu": [LINUX_X86, LINUX_ARM, WINDOWS],
            "cu126": [LINUX_X86, LINUX_ARM, WINDOWS],
            "cu128": [LINUX_X86, LINUX_ARM, WINDOWS],
            "cu130": [LINUX_X86, LINUX_ARM, WINDOWS],
            "rocm6.3": [LINUX_X86],
            "rocm6.4": [LINUX_X86],
            "xpu": [LINUX_X86, WINDOWS],
        },
    },
    "2.8.0": {
        "pythons": ["cp310", "cp311", "cp312", "cp313", "cp313t"],
        "backends": {
            "cpu": [LINUX_X86, LINUX_ARM, WINDOWS],
            "cu126": [LINUX_X86, LINUX_ARM, WINDOWS],
            "cu128": [LINUX_X86, LINUX_ARM, WINDOWS],
            "cu129": [LINUX_X86, LINUX_ARM, WINDOWS],
            "rocm6.3": [LINUX_X86],
            "rocm6.4": [LINUX_X86],
            "xpu": [LINUX_X86, WINDOWS],
        },
    },
}
TIMESTAMP = 1774772182


def fake_sha256(text):
    return hashlib.sha256(text.encode()).hexdigest()


def wheel_names():
    for version, release in RELEASES.items():
        for backend, platforms in release["backends"].items():
            for python in release["pythons"]:
                abi = python
                python_tag = python.rstrip("t")
                for platform in platforms:
                    name = f"torch-{version}+{backend}-{python_tag}-{abi}-{platform}.whl"
                    yield backend, name


def upstream(root, real):
    """Writes DIR/whl/torch/index.html (the page), DIR/whl/index.html (the project list devpi
    reads) and DIR/simple/index.html (an empty general upstream). `real` maps the filenames of
    the wheels that exist to their sha256."""
    names = set()
    lines = []
    for backend, name in wheel_names():
        names.add(name)
        sha256 = real.get(name) or fake_sha256(name)
        metadata = fake_sha256(name + ".metadata")
        href = f"/whl/{backend}/{name.replace('+', '%2B')}#sha256={sha256}"
        lines.append(
            f'    <a href="{href}" data-dist-info-metadata="sha256={metadata}" '
            f'data-core-metadata="sha256={metadata}">{name}</a><br/>'
        )
    missing = set(real) - names
    if missing:
        sys.exit(f"helper: {sorted(missing)} are not on the generated page")
    page = (
        "<!DOCTYPE html>\n<html>\n  <body>\n    <h1>Links for torch</h1>\n"
        + "\n".join(lines)
        + f"\n  </body>\n</html>\n<!--TIMESTAMP {TIMESTAMP}-->"
    )
    write(os.path.join(root, "whl", "torch", "index.html"), page)
    write(
        os.path.join(root, "whl", "index.html"),
        '<!DOCTYPE html>\n<html>\n  <body>\n    <h1>Links for torch</h1>\n'
        '    <a href="/whl/torch/">torch</a><br/>\n  </body>\n</html>',
    )
    write(
        os.path.join(root, "simple", "index.html"),
        "<!DOCTYPE html>\n<html>\n  <body>\n  </body>\n</html>\n",
    )
    print(len(lines))


# PyPI's torch: the releases it carries wheels for, newest first, and the Python tags of each
# (PyPI's real page lists 987 wheels; these give a page of that size and shape). Every wheel is
# unlabelled: on Linux x86_64 the release's default CUDA build, elsewhere its CPU build.
PYPI_RELEASES = [
    (version, pythons)
    for versions, pythons in [
        (["2.11.0", "2.10.0", "2.9.1", "2.9.0"], ["cp310", "cp311", "cp312", "cp313", "cp313t", "cp314", "cp314t"]),
        (["2.8.0", "2.7.1", "2.7.0", "2.6.0"], ["cp39", "cp310", "cp311", "cp312", "cp313", "cp313t"]),
        (["2.5.1", "2.5.0", "2.4.1", "2.4.0", "2.3.1", "2.3.0", "2.2.2", "2.2.1", "2.2.0"], ["cp38", "cp39", "cp310", "cp311", "cp312"]),
        (["2.1.2", "2.1.1", "2.1.0", "2.0.1", "2.0.0", "1.13.1", "1.13.0", "1.12.1", "1.12.0", "1.11.0"], ["cp37", "cp38", "cp39", "cp310", "cp311"]),
    ]
    for version in versions
]
PYPI_PLATFORMS = ["manylinux_2_28_x86_64", "manylinux_2_28_aarch64", "win_amd64", "macosx_11_0_arm64"]


def pypi_torch(root, base):
    lines = []
    for version, pythons in PYPI_RELEASES:
        for python in pythons:
            for platform in PYPI_PLATFORMS:
                name = f"torch-{version}-{python.rstrip('t')}-{python}-{platform}.whl"
                sha256 = fake_sha256("pypi/" + name)
                metadata = fake_sha256("pypi/" + name + ".metadata")
                href = f"{base}/packages/{sha256[:2]}/{sha256[2:4]}/{name}#sha256={sha256}"
                lines.append(
                    f'    <a href="{href}" data-requires-python="&gt;=3.9.0" '
                    f'data-dist-info-metadata="sha256={metadata}" '
                    f'data-core-metadata="sha256={metadata}">{name}</a><br />'
                )
    page = (
        '<!DOCTYPE html>\n<html>\n  <head>\n    <meta name="pypi:repository-version" content="1.4">\n'
        "    <title>Links for torch</title>\n  </head>\n  <body>\n    <h1>Links for torch</h1>\n"
        + "\n".join(lines)
        + "\n  </body>\n</html>\n<!--SERIAL 31234567-->"
    )
    write(os.path.join(root, "simple", "torch", "index.html"), page)
    print(len(lines))


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as out:
        out.write(text)


def ports(count):
    """Free ports below the kernel's ephemeral range, so no client socket of the benchmark
    (wrk, curl, the proxies' upstream connections) can hold one when its server starts."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range", encoding="utf-8") as f:
            low = int(f.read().split()[0])
    except OSError:
        low = 32768
    chosen = []
    candidates = list(range(max(1024, low - 12000), low))
    random.shuffle(candidates)
    for port in candidates:
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
        chosen.append(port)
        if len(chosen) == count:
            break
    for port in chosen:
        print(port)


def devpi_request(method, url, body=None, auth=None):
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method=method)
    request.add_header("Accept", "application/json")
    request.add_header("Content-Type", "application/json")
    if auth:
        request.add_header("X-Devpi-Auth", auth)
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.load(response)


def devpi_mirror(server, password, index, mirror_url):
    """The HTTP API devpi-client uses: `POST /+login`, then `PUT /<user>/<index>` with the
    index config (type=mirror, mirror_url)."""
    server = server.rstrip("/")
    login = devpi_request("POST", f"{server}/+login", {"user": "root", "password": password})
    token = login["result"]["password"]
    auth = base64.b64encode(f"root:{token}".encode()).decode()
    config = {"type": "mirror", "mirror_url": mirror_url, "title": "fake PyTorch upstream"}
    devpi_request("PUT", f"{server}/{index}", config, auth)


# wrk --latency prints e.g.
#     Latency Distribution
#        50%    1.62ms
#        99%   12.07ms
#   ...
#   Non-2xx or 3xx responses: 12
# Requests/sec:  38215.47
def wrk(paths):
    """One line for one run; for several, the median of each figure and every error."""
    runs = [read_wrk(path) for path in paths]
    median = lambda values: statistics.median(values)  # noqa: E731
    rate = median([r[0] for r in runs])
    p50 = median([r[1] for r in runs])
    p99 = median([r[2] for r in runs])
    errors = sum(r[3] for r in runs)
    print(f"{rate:.0f} {p50:.2f} {p99:.2f} {errors}")


def read_wrk(path):
    text = open(path, encoding="utf-8").read()
    rate = re.search(r"Requests/sec:\s+([\d.]+)", text)
    p50 = re.search(r"^\s+50%\s+([\d.]+)(us|ms|s)\s*$", text, re.M)
    p99 = re.search(r"^\s+99%\s+([\d.]+)(us|ms|s)\s*$", text, re.M)
    if not (rate and p50 and p99):
        sys.exit(f"helper: cannot read wrk's output in {path}")
    errors = 0
    bad = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", text)
    if bad:
        errors += int(bad.group(1))
    sock = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", text)
    if sock:
        errors += sum(int(n) for n in sock.groups())
    scale = {"us": 0.001, "ms": 1.0, "s": 1000.0}
    ms = lambda m: float(m.group(1)) * scale[m.group(2)]  # noqa: E731
    return float(rate.group(1)), ms(p50), ms(p99), errors


def link(path, filename):
    page = json.load(open(path, encoding="utf-8"))
    for entry in page.get("files", []):
        if entry.get("filename") == filename:
            print(entry["url"])
            return
    sys.exit(f"helper: `{filename}` is not on the page {path}")


def main(argv):
    command, args = argv[1], argv[2:]
    if command == "ports":
        ports(int(args[0]))
    elif command == "upstream":
        upstream(args[0], dict(arg.split("=", 1) for arg in args[1:]))
    elif command == "devpi-mirror":
        devpi_mirror(*args)
    elif command == "wrk":
        wrk(args)
    elif command == "link":
        link(*args)
    elif command == "pypi-torch":
        pypi_torch(*args)
    else:
        sys.exit(f"helper: unknown command `{command}`")


if __name__ == "__main__":
    main(sys.argv)
