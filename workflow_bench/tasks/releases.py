"""Registry releases for corpus recipes: a package's archive fetched once into the cache, checked
against its pinned sha256 every time it is used, and extracted (bounded) as a file map.

PyPI sdists come from the package index's JSON API (PEP 691; ``$WORKFLOW_BENCH_PYPI_INDEX`` names
a mirror), npm tarballs through ``npm pack`` (npm checks the registry's integrity, then the
recipe's sha256 is checked here). Extraction keeps only regular files below the archive's one
top directory (no links, devices, absolute or ``..`` paths) matching the recipe's patterns.

Callers: ``tasks.recipes``.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import os
import tarfile
import tempfile
import urllib.request
from pathlib import Path, PurePosixPath
from typing import Annotated

from pydantic import BeforeValidator, Field

from workflow_bench.input_files import InputModel, Text, read_bounded
from workflow_bench.process import run_process

MAX_ARCHIVE_BYTES = 64 * 1024 * 1024  # a package release, compressed; the largest here is ~1 MB
MAX_EXTRACTED_BYTES = 256 * 1024 * 1024
MAX_ARCHIVE_FILES = 20_000
FETCH_TIMEOUT_S = 300
PYPI_INDEX = "https://pypi.org/simple"  # $WORKFLOW_BENCH_PYPI_INDEX overrides (a mirror)


class RecipeError(ValueError):
    """The recipe, a release or a build step was refused (exit 2); the message names it."""


def _sha256(value: object) -> str:
    if not isinstance(value, str) or len(value) != 64 or any(c not in "0123456789abcdef" for c in value):
        raise ValueError(f"want 64 lowercase hex characters, got {value!r}")
    return value


class Release(InputModel):
    version: Text = Field(description="the release's exact version on the registry")
    sha256: Annotated[str, BeforeValidator(_sha256)] = Field(description="sha256 of its archive")


def fetch_release(registry: str, package: str, release: Release, *, cache: Path) -> Path:
    """The release's archive in the cache, fetched once and checked against its sha256 every time."""
    store = cache / "releases"
    store.mkdir(parents=True, exist_ok=True)
    cached = store / f"{release.sha256}.tar.gz"
    if not cached.is_file():
        with tempfile.TemporaryDirectory(dir=store, prefix=".fetch-") as scratch:
            fetched = (_fetch_pypi if registry == "pypi" else _fetch_npm)(
                package, release.version, Path(scratch)
            )
            _check_sha256(fetched, release, package)
            os.replace(fetched, cached)
    _check_sha256(cached, release, package)
    return cached


def _check_sha256(path: Path, release: Release, package: str) -> None:
    digest = hashlib.sha256(read_bounded(path, max_bytes=MAX_ARCHIVE_BYTES)).hexdigest()
    if digest != release.sha256:
        raise RecipeError(
            f"{package} {release.version}: the archive's sha256 is {digest}, the recipe pins {release.sha256}"
        )


def _fetch_pypi(package: str, version: str, scratch: Path) -> Path:
    """The sdist from the package index's JSON API (PEP 691), hashes checked by the caller."""
    index = os.environ.get("WORKFLOW_BENCH_PYPI_INDEX", PYPI_INDEX).rstrip("/")
    request = urllib.request.Request(
        f"{index}/{package}/", headers={"Accept": "application/vnd.pypi.simple.v1+json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=FETCH_TIMEOUT_S) as response:
            listing = json.loads(response.read(8 * 1024 * 1024))
    except (OSError, ValueError) as err:
        raise RecipeError(f"{package}: the package index {index} did not answer: {err}") from None
    normalized = package.replace("-", "_").lower()
    wanted = {f"{package}-{version}.tar.gz", f"{normalized}-{version}.tar.gz"}
    found = [f for f in listing.get("files", ()) if isinstance(f, dict) and f.get("filename") in wanted]
    if not found:
        raise RecipeError(f"{package} {version}: no sdist ({' or '.join(sorted(wanted))}) on {index}")
    target = scratch / "release.tar.gz"
    try:
        with urllib.request.urlopen(found[0]["url"], timeout=FETCH_TIMEOUT_S) as response:
            target.write_bytes(response.read(MAX_ARCHIVE_BYTES + 1))
    except OSError as err:
        raise RecipeError(f"{package} {version}: download failed: {err}") from None
    return target


def _fetch_npm(package: str, version: str, scratch: Path) -> Path:
    """The tarball through ``npm pack`` (the registry's integrity checked by npm, sha256 by the caller)."""
    result = run_process(
        ["npm", "pack", f"{package}@{version}", "--pack-destination", str(scratch), "--json", "--silent"],
        cwd=scratch,
        timeout_s=FETCH_TIMEOUT_S,
    )
    if not result.ok:
        raise RecipeError(f"{package}@{version} is not on the npm registry: {result.describe()}")
    packed = sorted(scratch.glob("*.tgz"))
    if len(packed) != 1:
        raise RecipeError(f"npm pack {package}@{version} left {len(packed)} tarballs")
    return packed[0]


def extract(archive: Path, include: tuple[str, ...]) -> dict[str, tuple[bytes, bool]]:
    """The archive's regular files below its one top directory: path -> (bytes, executable)."""
    files: dict[str, tuple[bytes, bool]] = {}
    total = 0
    with tarfile.open(archive, mode="r:*") as tar:
        for index, member in enumerate(tar):
            if index >= MAX_ARCHIVE_FILES:
                raise RecipeError(f"{archive.name}: over {MAX_ARCHIVE_FILES} entries")
            parts = [p for p in PurePosixPath(member.name.lstrip("./")).parts if p not in ("", ".")]
            if member.name.startswith("/") or ".." in parts:
                raise RecipeError(f"{archive.name}: entry {member.name!r} escapes the archive")
            if member.isdir() or len(parts) < 2:
                continue
            if not member.isreg():
                continue  # links and devices: never written
            path = "/".join(parts[1:])
            if not any(fnmatch.fnmatchcase(path, pattern) for pattern in include):
                continue
            total += member.size
            if total > MAX_EXTRACTED_BYTES:
                raise RecipeError(f"{archive.name}: over {MAX_EXTRACTED_BYTES} bytes extracted")
            handle = tar.extractfile(member)
            if handle is None:
                continue
            files[path] = (handle.read(), bool(member.mode & 0o111))
    if not files:
        raise RecipeError(f"{archive.name}: no file matches include {list(include)}")
    return files
