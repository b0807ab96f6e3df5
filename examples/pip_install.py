#!/usr/bin/env python3
"""Install PyTorch packages with pip, choosing each build with wheelgate (no proxy needed).

For each requirement:

1. ``wheelgate.select`` says which build this machine should get (``cu130``, ``rocm6.4``,
   ``cpu``), why every other build was rejected, and the index that serves it;
2. the project's page is fetched from the index as PEP 691 JSON, the form an installer holds;
3. ``wheelgate.choose`` keeps the files wheelgate's proxy would serve this machine and explains
   the choice for the version installed;
4. pip installs from exactly those files (a ``--find-links`` page of them), with whatever pip
   options follow ``--``.

    python examples/pip_install.py torch==2.9.0 torchvision -- --no-deps --target ./site
    python examples/pip_install.py --index http://127.0.0.1:8000/whl torch --dry-run

``--index`` is the base of per-project pages (``<index>/<project>/``); without it, the base of
the index ``select`` names. Machine overrides (``WHEELGATE_*``) apply as for ``wheelgate detect``.
"""

import argparse
import html
import json
import subprocess
import sys
import tempfile
import urllib.parse
import urllib.request

import wheelgate

PEP_691 = "application/vnd.pypi.simple.v1+json"


def fetch_page(index: str, project: str) -> tuple[str, dict]:
    """The project's page under ``index`` as PEP 691 JSON (its URL and its body)."""
    url = f"{index.rstrip('/')}/{project}/"
    request = urllib.request.Request(url, headers={"Accept": PEP_691})
    with urllib.request.urlopen(request, timeout=60) as response:
        kind = response.headers.get_content_type()
        if kind != PEP_691:
            raise SystemExit(f"{url} answered `{kind}`, not PEP 691 JSON ({PEP_691})")
        return response.geturl(), json.load(response)


def find_links_page(page_url: str, files: list) -> str:
    """A PEP 503 page of ``files`` (absolute links with their sha256) for pip's --find-links."""
    links = []
    for entry in files:
        url = urllib.parse.urljoin(page_url, entry["url"])
        sha256 = entry.get("hashes", {}).get("sha256")
        if sha256 and "#" not in url:
            url += f"#sha256={sha256}"
        links.append(f'<a href="{html.escape(url)}">{html.escape(entry["filename"])}</a><br/>')
    return "<!DOCTYPE html><html><body>\n" + "\n".join(links) + "\n</body></html>\n"


def main(argv: list) -> int:
    ours, pip_args = (argv[: argv.index("--")], argv[argv.index("--") + 1 :]) if "--" in argv else (argv, [])
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("requirements", nargs="+", metavar="REQUIREMENT")
    parser.add_argument("--index", help="base URL of per-project PEP 691 pages")
    parser.add_argument("--dry-run", action="store_true", help="choose and explain, do not install")
    args = parser.parse_args(ours)

    machine = wheelgate.detect()
    print(f"machine: {machine.platform}, token {machine.token}")
    with tempfile.TemporaryDirectory(prefix="wheelgate-links-") as links:
        pages = []
        for requirement, choice in zip(args.requirements, wheelgate.select(args.requirements, machine)):
            if choice.backend is None:
                print(f"{requirement}: no build runs on this machine", file=sys.stderr)
                for backend, reason in choice.reasons:
                    print(f"  {backend}: {reason}", file=sys.stderr)
                return 1
            print(f"{requirement}: {choice.backend} from {choice.index_url}")
            index = args.index or choice.index_url.rsplit("/", 1)[0]
            page_url, page = fetch_page(index, choice.project)
            chosen = wheelgate.choose(choice.project, page["files"], machine)
            for version in chosen.versions[:1]:
                print(f"  newest on the page: {version.version} -> {version.backend}, {len(version.kept)} files")
                for build in version.builds[1:]:
                    print(f"    {build.backend}: {build.reason}")
            path = f"{links}/{choice.project}.html"
            with open(path, "w", encoding="utf-8") as out:
                out.write(find_links_page(page_url, chosen.files))
            pages.append(path)
        command = [sys.executable, "-m", "pip", "install"]
        for path in pages:
            command += ["--find-links", path]
        command += [*pip_args, *args.requirements]
        print("running:", " ".join(command))
        if args.dry_run:
            return 0
        return subprocess.call(command)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
