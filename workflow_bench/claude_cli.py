"""Locating and checking the Claude Code CLI binary the sandbox will run.

The version is pinned because stream-json fields, flags and failure
reporting change between releases (see reference/environment.md); a sweep
on an unpinned CLI would measure a different harness.

The binary is identified by content, not by what it prints: its sha256 must equal the digest
committed for this platform (``tools/claude-code/binary-sha256.json``) before it is ever run,
so a script that prints the pinned version string is refused, and never executed. Hashing the
~400 MB binary costs seconds, so the digest is memoized per (device, inode, size, mtime, ctime):
in this process, and in a record file beside the binary that later processes trust only while
the file's stat still matches (any rewrite or replacement changes it).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import platform
import re
import shutil
import sys
from pathlib import Path

from .process import run_process

# Keep in sync with tools/claude-code/package.json (tests/unit/test_claude_cli.py checks it).
PINNED_CLAUDE_CODE_VERSION = "2.1.332"
# Keep in sync with tools/claude-code/binary-sha256.json (tests/unit/test_claude_cli.py checks it).
PINNED_CLAUDE_CODE_SHA256 = {
    "linux-x64": "a2df1f41bb00250992926420d0063f89b127cb81abdd284dbefb80c50ff1d026",
}
DIGEST_RECORD_SUFFIX = ".wfbench-sha256"
_MACHINES = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64", "arm64": "arm64"}
_digest_memo: dict[tuple[int, ...], str] = {}
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


def platform_key() -> str:
    """The npm platform name of this machine, e.g. ``linux-x64``."""
    machine = platform.machine().lower()
    return f"{sys.platform}-{_MACHINES.get(machine, machine)}"


def _stat_key(info: os.stat_result) -> tuple[int, ...]:
    return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


def binary_digest(binary: Path) -> str:
    """sha256 of ``binary``, memoized per stat key (in process and in a record beside the binary)."""
    record = binary.with_name(binary.name + DIGEST_RECORD_SUFFIX)
    try:
        with open(binary, "rb") as handle:
            key = _stat_key(os.fstat(handle.fileno()))
            if key in _digest_memo:
                return _digest_memo[key]
            recorded = _read_record(record)
            if recorded is not None and recorded[0] == key:
                _digest_memo[key] = recorded[1]
                return recorded[1]
            digest = hashlib.file_digest(handle, "sha256").hexdigest()
    except OSError as err:
        raise ClaudeCliError(f"cannot read Claude Code binary {binary}: {err.strerror or err}") from None
    _digest_memo[key] = digest
    with contextlib.suppress(OSError):  # a read-only install is fine: the next process hashes again
        record.write_text(json.dumps({"stat": list(key), "sha256": digest}) + "\n", encoding="utf-8")
    return digest


def _read_record(record: Path) -> tuple[tuple[int, ...], str] | None:
    try:
        data = json.loads(record.read_text(encoding="utf-8")[:1024])
        return tuple(int(v) for v in data["stat"]), str(data["sha256"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def check_claude_digest(binary: Path) -> str:
    """Refuse ``binary`` unless its sha256 is the one pinned for this platform; return the digest."""
    expected = PINNED_CLAUDE_CODE_SHA256.get(platform_key())
    if expected is None:
        raise ClaudeCliError(
            f"no pinned Claude Code {PINNED_CLAUDE_CODE_VERSION} binary digest for platform "
            f"{platform_key()}; add the sha256 of its claude.exe to tools/claude-code/binary-sha256.json "
            "and claude_cli.py"
        )
    digest = binary_digest(binary)
    if digest != expected:
        raise ClaudeCliError(
            f"{binary} is not the pinned Claude Code {PINNED_CLAUDE_CODE_VERSION} binary: sha256 {digest}, "
            f"expected {expected} ({platform_key()}); run ./dev setup or pass --claude-bin pointing at it"
        )
    return digest


def claude_version(binary: Path) -> str:
    """``--version`` of ``binary``, after its content matched the pinned digest; must equal the pin."""
    check_claude_digest(binary)  # before running it: an unknown binary is never executed
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
