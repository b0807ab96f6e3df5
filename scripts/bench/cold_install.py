#!/usr/bin/env python3
"""Pieces of scripts/bench-cold-install that are awkward in bash. Standard library only.

  cold_install.py wheels DIR SIZE_MB...   one installable wheel per size under DIR/files (a
                                          random, incompressible payload, stored as a large
                                          wheel's libraries are), its PEP 503 page under
                                          DIR/simple/<project>/; prints one requirement a line.
                                          Made once: wheels already there are kept.
  cold_install.py pages DIR               for each wheel already under DIR/files (real wheels, copied
                                          from a registry), its PEP 503 page under
                                          DIR/simple/<project>/; prints one requirement a line
  cold_install.py summary FILE            per mode, the runs' min, median and max seconds from
                                          FILE's `round mode seconds uv-cpu proxy-cpu` lines (`-`:
                                          no proxy), each proxy's median against the direct
                                          median and each round's, and the CPU-seconds' medians
"""

import hashlib
import os
import statistics
import sys
import zipfile

# The payload is written in pieces of this size: memory stays flat for a 700 MB wheel.
PIECE = 8 * 1024 * 1024


def wheel(directory, index, size_mb):
    """Writes the `index`th wheel, `size_mb` MB of payload, unless it exists; returns its
    project name and file name."""
    project = f"wheelgate-bench-cold-{index}"
    module = project.replace("-", "_")
    filename = f"{module}-1.0-py3-none-any.whl"
    path = os.path.join(directory, "files", filename)
    if not os.path.exists(path):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        dist_info = f"{module}-1.0.dist-info"
        members = {
            f"{dist_info}/METADATA": f"Metadata-Version: 2.1\nName: {project}\nVersion: 1.0\n".encode(),
            f"{dist_info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: wheelgate-bench\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        }
        record = []
        partial = path + ".part"
        with zipfile.ZipFile(partial, "w", zipfile.ZIP_STORED, allowZip64=True) as archive:
            payload = f"{module}/payload.bin"
            digest = hashlib.sha256()
            with archive.open(zipfile.ZipInfo(payload), "w", force_zip64=True) as member:
                left = size_mb * 1000 * 1000
                while left > 0:
                    piece = os.urandom(min(PIECE, left))
                    digest.update(piece)
                    member.write(piece)
                    left -= len(piece)
            record.append(f"{payload},sha256={urlsafe(digest.digest())},{size_mb * 1000 * 1000}")
            for name, data in members.items():
                archive.writestr(name, data)
                record.append(f"{name},sha256={urlsafe(hashlib.sha256(data).digest())},{len(data)}")
            record.append(f"{dist_info}/RECORD,,")
            archive.writestr(f"{dist_info}/RECORD", "\n".join(record) + "\n")
        os.replace(partial, path)
    page = os.path.join(directory, "simple", project, "index.html")
    os.makedirs(os.path.dirname(page), exist_ok=True)
    sha256 = file_sha256(path)
    with open(page, "w") as out:
        out.write(
            f'<!DOCTYPE html>\n<html><body>\n<a href="/files/{filename}#sha256={sha256}">{filename}</a>\n</body></html>\n'
        )
    return project


def pages(directory):
    """Writes a page for each wheel in `directory`/files; returns the requirements."""
    import re

    requirements = []
    for filename in sorted(os.listdir(os.path.join(directory, "files"))):
        if not filename.endswith(".whl"):
            continue
        name, version = filename.split("-")[:2]
        project = re.sub(r"[-_.]+", "-", name).lower()
        page = os.path.join(directory, "simple", project, "index.html")
        os.makedirs(os.path.dirname(page), exist_ok=True)
        sha256 = file_sha256(os.path.join(directory, "files", filename))
        with open(page, "w") as out:
            out.write(
                f'<!DOCTYPE html>\n<html><body>\n<a href="/files/{filename}#sha256={sha256}">{filename}</a>\n</body></html>\n'
            )
        requirements.append(f"{project}=={version}")
    return requirements


def urlsafe(digest):
    import base64

    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def file_sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as data:
        while piece := data.read(PIECE):
            digest.update(piece)
    return digest.hexdigest()


def summary(path):
    runs = {}
    cpu = {}
    rounds = {}
    with open(path) as lines:
        for line in lines:
            number, mode, seconds, uv_cpu, proxy_cpu = line.split()
            runs.setdefault(mode, []).append(float(seconds))
            cpu.setdefault(mode, []).append((float(uv_cpu), None if proxy_cpu == "-" else float(proxy_cpu)))
            rounds.setdefault(number, {})[mode] = float(seconds)
    for mode, times in runs.items():
        print(
            f"{mode:<14} runs {len(times)}  min {min(times):6.2f} s  median {statistics.median(times):6.2f} s  max {max(times):6.2f} s"
        )
    for mode, pairs in cpu.items():
        uv = statistics.median(u for u, _ in pairs)
        proxies = [p for _, p in pairs if p is not None]
        proxy = f", the proxy {statistics.median(proxies):.2f}" if proxies else ""
        print(f"{mode:<14} CPU-seconds (medians): uv {uv:.2f}{proxy}")
    if "direct" not in runs:
        return
    direct = statistics.median(runs["direct"])
    for mode in ("proxy-cold", "reference-cold"):
        if mode not in runs:
            continue
        added = statistics.median(runs[mode])
        target = " (target: under +10 %)" if mode == "proxy-cold" else ""
        print(f"{mode} against direct (medians): {100 * (added - direct) / direct:+.1f} %{target}")
        # A round's runs are next to each other in time: their ratio leaves out a drift of the
        # machine or the upstream between rounds.
        ratios = [r[mode] / r["direct"] for r in rounds.values() if {mode, "direct"} <= r.keys()]
        each = ", ".join(f"{100 * (ratio - 1):+.1f}" for ratio in ratios)
        print(f"  each round, {mode} against direct: {each} %; median {100 * (statistics.median(ratios) - 1):+.1f} %")


def main(argv):
    if len(argv) >= 3 and argv[1] == "wheels":
        for index, size in enumerate(argv[3:]):
            print(wheel(argv[2], index, int(size)))
    elif len(argv) == 3 and argv[1] == "pages":
        for requirement in pages(argv[2]):
            print(requirement)
    elif len(argv) == 3 and argv[1] == "summary":
        summary(argv[2])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
