"""Locating and checking the Claude Code CLI binary the sandbox will run.

The version is pinned because stream-json fields, flags and failure
reporting change between releases (see reference/environment.md); a sweep
on an unpinned CLI would measure a different harness.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

from .process import run_process

# Keep in sync with tools/claude-code/package.json (tests/unit/test_claude_cli.py checks it).
PINNED_CLAUDE_CODE_VERSION = "2.1.332"
CLAUDE_BIN_ENV = "WORKFLOW_BENCH_CLAUDE_BIN"
_VERSION = re.compile(r"^(\d+\.\d+\.\d+) \(Claude Code\)")


class ClaudeCliError(RuntimeError):
    pass


def default_cache_dir() -> Path:
    base = os.environ.get("WORKFLOW_BENCH_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "workflow-bench"
    )
    return Path(base)


def pinned_install_path() -> Path:
    prefix = default_cache_dir() / f"claude-code-{PINNED_CLAUDE_CODE_VERSION}"
    return prefix / "node_modules" / "@anthropic-ai" / "claude-code" / "bin" / "claude.exe"


def locate_claude(explicit: str | None) -> Path:
    """--claude-bin, else $WORKFLOW_BENCH_CLAUDE_BIN, else the ./dev cache install, else PATH."""
    for candidate in (explicit, os.environ.get(CLAUDE_BIN_ENV), str(pinned_install_path())):
        if candidate and Path(candidate).is_file():
            return Path(candidate).resolve()
        if candidate and candidate in (explicit, os.environ.get(CLAUDE_BIN_ENV)):
            raise ClaudeCliError(f"Claude Code binary {candidate!r} does not exist")
    found = shutil.which("claude")
    if found:
        return Path(found).resolve()
    raise ClaudeCliError(
        f"Claude Code CLI {PINNED_CLAUDE_CODE_VERSION} not found; run ./dev setup (installs it into "
        f"{pinned_install_path().parent.parent.parent.parent}) or pass --claude-bin"
    )


def claude_version(binary: Path) -> str:
    """``--version`` of ``binary``; must equal the pinned version."""
    result = run_process(
        [str(binary), "--version"], timeout_s=30, env={"PATH": "/usr/bin:/bin", "HOME": "/nonexistent"}
    )
    match = _VERSION.match(result.stdout.decode("utf-8", "replace").strip())
    if not result.ok or match is None:
        raise ClaudeCliError(f"{binary} --version failed: {result.describe()}")
    version = match.group(1)
    if version != PINNED_CLAUDE_CODE_VERSION:
        raise ClaudeCliError(
            f"{binary} is Claude Code {version}, but this harness is pinned to {PINNED_CLAUDE_CODE_VERSION}; "
            "run ./dev setup or pass --claude-bin pointing at the pinned version"
        )
    return version
