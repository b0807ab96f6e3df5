#!/usr/bin/env python3
"""The CycloneDX 1.5 SBOM of one release artifact: the crates its Rust code is built from.

  release-sbom.py ARTIFACT PACKAGE TARGET OUT.cdx.json

ARTIFACT is the file the SBOM describes (its sha256 goes into the SBOM), PACKAGE the workspace
crate it is built from (`wheelgate`, `wheelgate-py`, ...), TARGET the Rust target triple it was
built for. The components are the crates that crate depends on for that target, normal
dependencies only (build scripts and proc macros run on the build machine and ship nothing of
themselves), each with its version, license expression, package URL and the sha256 of its
`.crate` from Cargo.lock. `cargo metadata` runs offline with the lock file as it is.

Then validates the document against CycloneDX's own JSON schema (cyclonedx-python-lib) and
fails on any error. Deterministic: the timestamp is the commit's, the serial number a UUID made
from the artifact's hash.
"""

import hashlib
import json
import subprocess
import sys
import tomllib
import uuid
from pathlib import Path

SPEC = "1.5"


def spdx(expression):
    """Old crates write `MIT/Apache-2.0`, which means `MIT OR Apache-2.0`."""
    if not expression:
        return None
    return " OR ".join(part.strip() for part in expression.split("/"))


def purl(name, version):
    return f"pkg:cargo/{name}@{version}"


def closure(metadata, root_id):
    """Package ids `root_id` needs at run time on the filtered platform, itself included."""
    nodes = {node["id"]: node for node in metadata["resolve"]["nodes"]}
    seen, stack, edges = {root_id}, [root_id], {}
    while stack:
        current = stack.pop()
        edges[current] = []
        for dep in nodes[current]["deps"]:
            if not any(kind["kind"] is None for kind in dep["dep_kinds"]):
                continue
            edges[current].append(dep["pkg"])
            if dep["pkg"] not in seen:
                seen.add(dep["pkg"])
                stack.append(dep["pkg"])
    return seen, edges


def main(argv):
    if len(argv) != 5:
        sys.exit(__doc__)
    artifact, package, target, out = Path(argv[1]), argv[2], argv[3], Path(argv[4])
    repo = Path(__file__).resolve().parent.parent
    metadata = json.loads(
        subprocess.run(
            ["cargo", "metadata", "--format-version", "1", "--locked", "--offline",
             "--filter-platform", target],
            cwd=repo, check=True, capture_output=True, text=True,
        ).stdout
    )
    checksums = {
        (entry["name"], entry["version"]): entry["checksum"]
        for entry in tomllib.loads((repo / "Cargo.lock").read_text())["package"]
        if "checksum" in entry
    }
    packages = {p["id"]: p for p in metadata["packages"]}
    roots = [p["id"] for p in metadata["packages"]
             if p["name"] == package and p["id"] in metadata["workspace_members"]]
    if len(roots) != 1:
        sys.exit(f"release-sbom: no workspace crate named {package}")
    ids, edges = closure(metadata, roots[0])

    def component(package_id, kind):
        p = packages[package_id]
        entry = {
            "type": kind,
            "bom-ref": purl(p["name"], p["version"]),
            "name": p["name"],
            "version": p["version"],
            "purl": purl(p["name"], p["version"]),
        }
        if p.get("description"):
            entry["description"] = p["description"].strip()
        if spdx(p.get("license")):
            entry["licenses"] = [{"expression": spdx(p["license"])}]
        checksum = checksums.get((p["name"], p["version"]))
        if checksum:
            entry["hashes"] = [{"alg": "SHA-256", "content": checksum}]
        if p.get("repository"):
            entry["externalReferences"] = [{"type": "vcs", "url": p["repository"]}]
        return entry

    digest = hashlib.sha256(artifact.read_bytes()).hexdigest()
    commit_time = subprocess.run(
        ["git", "log", "-1", "--format=%cI"], cwd=repo, capture_output=True, text=True
    ).stdout.strip()
    main_component = component(roots[0], "application")
    main_component["hashes"] = [{"alg": "SHA-256", "content": digest}]
    main_component["properties"] = [
        {"name": "wheelgate:artifact", "value": artifact.name},
        {"name": "wheelgate:target", "value": target},
    ]
    document = {
        "bomFormat": "CycloneDX",
        "specVersion": SPEC,
        "serialNumber": f"urn:uuid:{uuid.uuid5(uuid.NAMESPACE_URL, 'sha256:' + digest)}",
        "version": 1,
        "metadata": {
            "timestamp": commit_time or "1970-01-01T00:00:00Z",
            "tools": {"components": [{"type": "application", "name": "wheelgate scripts/release"}]},
            "component": main_component,
        },
        "components": sorted(
            (component(i, "library") for i in ids if i != roots[0]),
            key=lambda c: (c["name"], c["version"]),
        ),
        "dependencies": sorted(
            (
                {
                    "ref": purl(packages[i]["name"], packages[i]["version"]),
                    "dependsOn": sorted(
                        {purl(packages[d]["name"], packages[d]["version"]) for d in deps}
                    ),
                }
                for i, deps in edges.items()
            ),
            key=lambda d: d["ref"],
        ),
    }
    text = json.dumps(document, indent=2, sort_keys=False) + "\n"

    from cyclonedx.schema import SchemaVersion
    from cyclonedx.validation.json import JsonStrictValidator

    errors = JsonStrictValidator(SchemaVersion.V1_5).validate_str(text)
    if errors:
        sys.exit(f"release-sbom: {out.name} is not valid CycloneDX {SPEC}: {errors}")
    out.write_text(text)
    licensed = sum(1 for c in document["components"] if "licenses" in c)
    print(f"{len(document['components'])} crates, {licensed} with a license")


if __name__ == "__main__":
    main(sys.argv)
