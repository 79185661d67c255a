"""Test dependencies for ``verify`` and the oracle: a ``sandbox_dependencies`` tree built from pins.

The sandbox's only Python is the host's ``/usr/bin/python3``, without pytest or anything else a
task's tests may import, and a cell has no network. ``build_dependencies`` installs a requirements
file for that interpreter into ``<out>/site-packages`` with ``uv pip install --target``: binary
wheels only (nothing is built, so no setup script runs on the host) and ``--no-deps`` (the file
lists the whole closure, every line ``name==version``, e.g. the output of ``uv pip compile``, so
nothing floats). It then writes ``<out>/wfbench-deps.json``: the requirements' sha256, the
interpreter and the tree's manifest digest. Put ``<out>`` inside the task repository's working
tree, declare it as a ``sandbox_dependencies`` source, and point ``PYTHONPATH`` at the mounted
``site-packages`` in ``verify`` / the oracle command. Binding hashes the tree again into
``dependency_manifest_digest`` (part of every binding's identity): a changed tree is a changed task.

``cached_dependencies`` keeps one such tree per requirements file in the workflow-bench cache (built
once, then offline). Callers: ``python -m workflow_bench.tasks deps`` (``./dev deps``), the canary's
pytest attacks, tests.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import secrets
import shutil
from pathlib import Path

from workflow_bench.digests import canonical_digest
from workflow_bench.input_files import InputFileError, read_bounded
from workflow_bench.process import run_process
from workflow_bench.taskspec.repos import cache_root, tree_manifest

SANDBOX_PYTHON = "/usr/bin/python3"  # the only interpreter inside the sandbox (read-only /usr)
MAX_REQUIREMENTS_BYTES = 64 * 1024
INSTALL_TIMEOUT_S = 900
MANIFEST_FILE = "wfbench-deps.json"
# `name==version`, optionally with environment markers or `--hash=` options after it.
_PINNED = re.compile(
    r"[A-Za-z0-9][A-Za-z0-9._-]*(\[[A-Za-z0-9,._-]+\])?==[A-Za-z0-9.!+_-]+(\s*(;|--hash=).*)?"
)


class DependencyBuildError(ValueError):
    """The requirements or the output directory were refused, or the install failed."""


def pinned_requirements(path: Path) -> bytes:
    """The requirements file's bytes; every requirement must pin an exact version."""
    try:
        data = read_bounded(path, max_bytes=MAX_REQUIREMENTS_BYTES)
    except (OSError, InputFileError) as err:
        raise DependencyBuildError(f"--requirements {path}: {err}") from None
    for number, line in enumerate(data.decode("utf-8", "replace").splitlines(), start=1):
        text = line.split("#", 1)[0].strip()
        if text and not _PINNED.fullmatch(text):
            raise DependencyBuildError(
                f"--requirements {path}: line {number}: {text!r} is not pinned; write name==version"
            )
    return data


def build_dependencies(*, requirements: Path, out: Path, uv_bin: str, python: str = SANDBOX_PYTHON) -> str:
    """Install ``requirements`` into ``out/site-packages``; return the tree's manifest digest."""
    data = pinned_requirements(requirements)
    if out.exists():
        raise DependencyBuildError(f"--out {out} already exists; choose a new directory")
    result = run_process(
        [
            uv_bin, "pip", "install", "--quiet", "--no-cache", "--only-binary", ":all:", "--no-deps",
            "--python", python, "--target", str(out / "site-packages"), "-r", str(requirements),
        ],
        timeout_s=INSTALL_TIMEOUT_S,
    )  # fmt: skip
    if not result.ok:
        raise DependencyBuildError(f"installing {requirements} failed: {result.describe()}")
    manifest = tree_manifest(out / "site-packages")
    digest = canonical_digest([list(entry) for entry in manifest.entries])
    record = {
        "requirements_sha256": hashlib.sha256(data).hexdigest(),
        "python": python,
        "site_packages_manifest_sha256": digest,
    }
    (out / MANIFEST_FILE).write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    return digest


def cached_dependencies(requirements: Path, *, uv_bin: str | None = None) -> Path:
    """The ``site-packages`` of ``requirements`` built once into the cache (``pydeps-<sha256[:16]>``).

    Built into a temporary directory and renamed into place, so concurrent callers (test workers,
    the canary) never see a half-built tree. Raises ``DependencyBuildError``."""
    digest = hashlib.sha256(pinned_requirements(requirements)).hexdigest()[:16]
    out = cache_root() / f"pydeps-{digest}"
    if not (out / MANIFEST_FILE).is_file():
        uv = uv_bin or os.environ.get("UV") or shutil.which("uv")
        if uv is None:
            raise DependencyBuildError(
                f"building {requirements} needs uv (not found; ./dev setup installs it)"
            )
        out.parent.mkdir(parents=True, exist_ok=True)
        staging = out.with_name(f"{out.name}.tmp-{secrets.token_hex(4)}")
        try:
            build_dependencies(requirements=requirements, out=staging, uv_bin=uv)
            with contextlib.suppress(FileExistsError, OSError):
                os.rename(staging, out)  # another caller finished first: theirs is as good
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        if not (out / MANIFEST_FILE).is_file():
            raise DependencyBuildError(f"building {requirements} into {out} left no {MANIFEST_FILE}")
    return out / "site-packages"
