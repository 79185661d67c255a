"""The pinned CLI version is stated once in Python and once for npm; they must agree."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from workflow_bench.claude_cli import (
    PINNED_CLAUDE_CODE_VERSION,
    ClaudeCliError,
    claude_version,
    locate_claude,
)

pytestmark = pytest.mark.unit
PIN_DIR = Path(__file__).resolve().parents[2] / "tools" / "claude-code"


def test_python_pin_matches_package_json_and_lock():
    package = json.loads((PIN_DIR / "package.json").read_text())
    lock = json.loads((PIN_DIR / "package-lock.json").read_text())
    assert package["dependencies"]["@anthropic-ai/claude-code"] == PINNED_CLAUDE_CODE_VERSION
    assert lock["packages"]["node_modules/@anthropic-ai/claude-code"]["version"] == PINNED_CLAUDE_CODE_VERSION


def test_explicit_missing_binary_is_an_error(tmp_path):
    with pytest.raises(ClaudeCliError, match="does not exist"):
        locate_claude(str(tmp_path / "nope"))


def test_wrong_version_is_refused(tmp_path):
    fake = tmp_path / "claude"
    fake.write_text("#!/bin/sh\necho '9.9.9 (Claude Code)'\n")
    fake.chmod(0o755)
    with pytest.raises(ClaudeCliError, match="pinned to"):
        claude_version(fake)
