"""The pinned CLI version is stated once in Python and once for npm; they must agree."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from workflow_bench import claude_cli
from workflow_bench.claude_cli import (
    DIGEST_RECORD_SUFFIX,
    PINNED_CLAUDE_CODE_SHA256,
    PINNED_CLAUDE_CODE_VERSION,
    ClaudeCliError,
    binary_digest,
    claude_version,
    locate_claude,
    platform_key,
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


def test_digest_pin_matches_the_committed_json():
    pinned = json.loads((PIN_DIR / "binary-sha256.json").read_text())
    assert pinned["version"] == PINNED_CLAUDE_CODE_VERSION
    assert pinned["sha256"] == PINNED_CLAUDE_CODE_SHA256


@pytest.mark.parametrize("printed", ["9.9.9", PINNED_CLAUDE_CODE_VERSION])
def test_a_binary_that_is_not_the_pinned_one_is_refused_and_never_run(printed, tmp_path):
    marker = tmp_path / "ran"
    fake = tmp_path / "claude"
    fake.write_text(f"#!/bin/sh\ntouch {marker}\necho '{printed} (Claude Code)'\n")
    fake.chmod(0o755)
    with pytest.raises(ClaudeCliError, match="not the pinned Claude Code"):
        claude_version(fake)
    assert not marker.exists(), "an unknown binary must not be executed"


def test_the_digest_record_is_trusted_only_while_the_file_is_unchanged(tmp_path, monkeypatch):
    binary = tmp_path / "claude.exe"
    binary.write_bytes(b"one")
    assert binary_digest(binary) == hashlib.sha256(b"one").hexdigest()
    record = tmp_path / f"claude.exe{DIGEST_RECORD_SUFFIX}"
    assert record.exists()
    monkeypatch.setattr(claude_cli, "_digest_memo", {})
    binary.write_bytes(b"two")  # same size, new content: mtime/ctime change, the record is stale
    assert binary_digest(binary) == hashlib.sha256(b"two").hexdigest()


def test_the_installed_binary_matches_its_pin(claude_bin):
    assert binary_digest(claude_bin) == PINNED_CLAUDE_CODE_SHA256[platform_key()]
