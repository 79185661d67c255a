"""Test dependencies for ``verify`` and the oracle: ``sandbox_dependencies`` trees built from pins.

**Python** (``build_dependencies``). The sandbox's only Python is the host's ``/usr/bin/python3``,
without pytest or anything else a task's tests may import, and a cell has no network.
``build_dependencies`` installs a requirements file for that interpreter into
``<out>/site-packages`` with ``uv pip install --target``: binary wheels only (nothing is built, so
no setup script runs on the host) and ``--no-deps`` (the file lists the whole closure, every line
``name==version``, e.g. the output of ``uv pip compile``, so nothing floats). It then writes
``<out>/wfbench-deps.json``: the requirements' sha256, the interpreter and the tree's manifest
digest. Put ``<out>`` inside the task repository's working tree, declare it as a
``sandbox_dependencies`` source, and point ``PYTHONPATH`` at the mounted ``site-packages`` in
``verify`` / the oracle command. Binding hashes the tree again into ``dependency_manifest_digest``
(part of every binding's identity): a changed tree is a changed task.

**Node** (``build_node_modules``). The repository's own lockfile is installed into its
``node_modules`` with the package manager the lockfile belongs to: ``npm ci`` (package-lock.json,
npm-shrinkwrap.json), ``pnpm install --frozen-lockfile`` (pnpm-lock.yaml) or ``yarn install
--frozen-lockfile`` (yarn.lock, classic yarn). pnpm and yarn come from the npm registry at the
version the project's ``packageManager`` field pins (else ``DEFAULT_TOOLS``), installed once into
the cache. Lifecycle scripts are off (``--ignore-scripts``: the install runs on the host, and a
dependency's postinstall would run there) unless ``allow_scripts``. A failed install removes the
partial ``node_modules``; an existing one is refused, never replaced. ``node_modules/.wfbench-
deps.json`` records the tool and its version, the lockfile's sha256, the host node and the tree's
manifest digest.

``cached_dependencies`` keeps one such tree per requirements file in the workflow-bench cache (built
once, then offline). Callers: ``python -m workflow_bench.tasks deps`` (``./dev deps``), the canary's
pytest attacks, ``tasks.recipes``, tests.
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
from workflow_bench.process import ProcessResult, run_process
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


def find_uv() -> str:
    """uv: ``$UV`` (``uv run`` sets it), else ``uv`` on PATH, else the one ``./dev`` installs into the
    cache; ``DependencyBuildError`` naming where it looked."""
    candidates = [os.environ.get("UV"), shutil.which("uv"), str(cache_root() / "uv" / "bin" / "uv")]
    for candidate in candidates:
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    raise DependencyBuildError(
        "uv was not found ($UV, PATH, the cache's uv/bin/uv): install it (`pip install uv`) or pass --uv"
    )


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
        "python_version": _python_version(python),
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
        try:
            uv = uv_bin or find_uv()  # the one lookup: $UV, PATH, the cache's uv (./dev setup's)
        except DependencyBuildError as exc:
            raise DependencyBuildError(f"building {requirements}: {exc}") from None
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


def _python_version(python: str) -> str | None:
    result = run_process(
        [python, "-I", "-S", "-c", "import sys; print(sys.version.split()[0])"], timeout_s=30
    )
    return result.stdout.decode().strip() or None if result.ok else None


# ── node ──────────────────────────────────────────────────────────────────

NODE_MANIFEST_FILE = ".wfbench-deps.json"
# Lockfile → package manager, in the order a project is looked at (npm's own lock first).
LOCKFILES = (
    ("package-lock.json", "npm"),
    ("npm-shrinkwrap.json", "npm"),
    ("pnpm-lock.yaml", "pnpm"),
    ("yarn.lock", "yarn"),
)
# Package-manager versions from the npm registry when package.json has no `packageManager` pin
# (the current releases when this was written: `npm view pnpm version`, `npm view yarn version`).
DEFAULT_TOOLS = {"pnpm": "10.34.8", "yarn": "1.22.22"}
_PACKAGE_MANAGER = re.compile(r"(npm|pnpm|yarn)@(\d+\.\d+\.\d+)(?:\+[A-Za-z0-9.-]+)?")
MAX_PACKAGE_JSON_BYTES = 1024 * 1024
NODE_INSTALL_TIMEOUT_S = 1800  # a cold install of a large lockfile over a slow link


def _lockfile(project: Path) -> tuple[Path, str]:
    for name, tool in LOCKFILES:
        if (project / name).is_file():
            return project / name, tool
    raise DependencyBuildError(
        f"--project {project}: no lockfile ({', '.join(n for n, _ in LOCKFILES)}); a tree built without "
        "one floats: commit the project's lockfile first"
    )


def _pinned_tool(project: Path, tool: str) -> str:
    """The tool's version: package.json's ``packageManager`` pin if it names this tool, else the default."""
    try:
        manifest = json.loads(read_bounded(project / "package.json", max_bytes=MAX_PACKAGE_JSON_BYTES))
    except FileNotFoundError:
        raise DependencyBuildError(f"--project {project}: no package.json") from None
    except (OSError, ValueError, InputFileError) as err:
        raise DependencyBuildError(f"--project {project}: package.json: {err}") from None
    pin = manifest.get("packageManager") if isinstance(manifest, dict) else None
    if isinstance(pin, str) and (match := _PACKAGE_MANAGER.fullmatch(pin)) and match.group(1) == tool:
        return match.group(2)
    return DEFAULT_TOOLS.get(tool, "")


def _tool_bin(tool: str, version: str, *, npm: str, cache: Path) -> str:
    """The package manager's executable: npm as found, pnpm/yarn installed once from the registry."""
    if tool == "npm":
        return npm
    prefix = cache / f"{tool}-{version}"
    binary = prefix / "node_modules" / ".bin" / tool
    if binary.exists():
        return str(binary)
    staging = cache / f".{tool}-{version}.partial"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    result = run_process(
        [npm, "install", "--prefix", str(staging), "--no-save", "--no-audit", "--no-fund",
         "--ignore-scripts", f"{tool}@{version}"],
        timeout_s=NODE_INSTALL_TIMEOUT_S,
    )  # fmt: skip
    if not result.ok:
        shutil.rmtree(staging, ignore_errors=True)
        raise DependencyBuildError(
            f"{tool}@{version} is not installable from the npm registry: {result.describe()}"
        )
    staging.rename(prefix)
    return str(binary)


def _install_argv(tool: str, binary: str, lockfile: Path, *, allow_scripts: bool) -> list[str]:
    scripts = [] if allow_scripts else ["--ignore-scripts"]
    if tool == "npm":
        return [binary, "ci", "--no-audit", "--no-fund", *scripts]
    if tool == "pnpm":
        return [binary, "install", "--frozen-lockfile", "--config.node-linker=hoisted", *scripts]
    if b"__metadata:" in lockfile.read_bytes()[:4096]:  # a yarn ≥ 2 lockfile: Plug'n'Play, no tree
        raise DependencyBuildError(
            f"{lockfile} is a yarn ≥ 2 lockfile: yarn 2+ comes through corepack, not the npm registry, "
            "and installs Plug'n'Play without node_modules; build the tree yourself with nodeLinker: "
            "node-modules and mount it"
        )
    return [binary, "install", "--frozen-lockfile", "--non-interactive", *scripts]


def build_node_modules(
    *,
    project: Path,
    npm: str = "npm",
    node: str = "node",
    allow_scripts: bool = False,
    cache: Path | None = None,
) -> str:
    """Install the project's lockfile into ``project/node_modules``; return the tree's manifest digest."""
    project = project.resolve()
    if not project.is_dir():
        raise DependencyBuildError(f"--project {project}: not a directory")
    lockfile, tool = _lockfile(project)
    version = _pinned_tool(project, tool)
    target = project / "node_modules"
    if target.exists() or target.is_symlink():
        raise DependencyBuildError(
            f"{target} exists already; remove it to build it from {lockfile.name}, or mount it as it is"
        )
    binary = _tool_bin(tool, version, npm=npm, cache=(cache or cache_root()) / "package-managers")
    try:
        result = run_process(  # stderr into stdout: npm prints its usage after the reason
            [
                "/bin/sh",
                "-c",
                'exec "$@" 2>&1',
                "sh",
                *_install_argv(tool, binary, lockfile, allow_scripts=allow_scripts),
            ],
            cwd=project,
            timeout_s=NODE_INSTALL_TIMEOUT_S,
        )
        if not result.ok:
            raise DependencyBuildError(
                f"{lockfile} does not install ({' '.join(filter(None, (tool, version)))}, exit "
                f"{result.returncode if result.state == 'exited' else result.state}): "
                + _install_error(result)
            )
        if not target.is_dir():
            raise DependencyBuildError(f"{tool} finished but made no {target}")
        node_version = run_process([node, "--version"], timeout_s=30).stdout.decode().strip() or None
        manifest = tree_manifest(target)
        digest = canonical_digest([list(entry) for entry in manifest.entries])
        record = {
            "tool": tool,
            "tool_version": version or _tool_version(binary),
            "lockfile": lockfile.name,
            "lockfile_sha256": hashlib.sha256(lockfile.read_bytes()).hexdigest(),
            "scripts": "allowed" if allow_scripts else "ignored",
            "host_node": node_version,
            "node_modules_manifest_sha256": digest,
        }
        (target / NODE_MANIFEST_FILE).write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    except BaseException:
        shutil.rmtree(target, ignore_errors=True)
        raise
    return digest


def _install_error(result: ProcessResult) -> str:
    """The package manager's reason: its first error lines, before any usage text it prints after."""
    reasons = []
    for line in result.stdout.decode("utf-8", "replace").splitlines():
        text = re.sub(r"^(npm (error|ERR!)|error|ERR_PNPM_\w+)\s*", "", line.strip()).strip()
        if text.startswith(("Usage:", "Clean install a project", "A complete log of this run")):
            break
        if text and not text.startswith(("code ", "npm warn")):
            reasons.append(text)
    return "; ".join(reasons[:6])[:1500] or result.describe()


def _tool_version(binary: str) -> str | None:
    result = run_process([binary, "--version"], timeout_s=30)
    return result.stdout.decode().strip() or None if result.ok else None
