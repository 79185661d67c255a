"""Sandbox backends for every process that touches a clone.

Public surface: the ``Sandbox`` protocol, the ``RunPolicy``/``Mount`` value
types, ``create_sandbox`` and ``preflight``, and the per-cell kernel bounds
(``CellLimits``/``CellResources``, ``_limits.py``). Backends stay private: ``bwrap``
is the default and fails closed; ``host-unsafe`` (``_host.py``) runs on the
host with paths translated and is NOT a security boundary (paired review
arms only, never in CI; the runner enforces both).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from enum import StrEnum
from pathlib import Path
from typing import Protocol

from workflow_bench.process import ProcessResult

from ._bwrap import (
    BwrapSandbox,
    Mount,
    ProcessBounds,
    RunPolicy,
    SandboxError,
    exec_only_copy,
    preflight_bwrap,
)
from ._cgroups import collect_stale_cgroups
from ._confine import PROJECT_MASK_NAME, PROJECT_SETTINGS, Confinement
from ._environment import (
    EMPTY_DIR_NAME,
    HOME_SIZE_BYTES,
    MODEL_SOCKET_DIR,
    SANDBOX_CLAUDE_BIN,
    SANDBOX_HOME,
    SANDBOX_WORKSPACE,
    TMP_SIZE_BYTES,
    claude_environment,
    tool_environment,
    write_runtime_dir,
)
from ._host import (
    HOST_CHILD_UID,
    UNSAFE_HOST_ARMS,
    HostSandbox,
    check_unsafe_host_request,
    preflight_host,
    unsafe_host_warning,
)
from ._limits import (
    DEFAULT_DISK_MIB,
    DEFAULT_MEMORY_MIB,
    DEFAULT_PIDS,
    MIN_DISK_MIB,
    MIN_MEMORY_MIB,
    MIN_PIDS,
    UNBOUNDED_CPU_NOTE,
    CellLimits,
    CellResources,
)
from ._mountns import enter_private_mounts, private_mounts_refusal
from ._mounts import Unmounted, unmount
from ._overlay import CloneSupport
from ._stale import release_stale_mounts

__all__ = [
    "DEFAULT_DISK_MIB",
    "DEFAULT_MEMORY_MIB",
    "DEFAULT_PIDS",
    "EMPTY_DIR_NAME",
    "HOME_SIZE_BYTES",
    "HOST_CHILD_UID",
    "MIN_DISK_MIB",
    "MIN_MEMORY_MIB",
    "MIN_PIDS",
    "MODEL_SOCKET_DIR",
    "PROJECT_MASK_NAME",
    "PROJECT_SETTINGS",
    "SANDBOX_CLAUDE_BIN",
    "SANDBOX_HOME",
    "SANDBOX_WORKSPACE",
    "TMP_SIZE_BYTES",
    "UNBOUNDED_CPU_NOTE",
    "UNSAFE_HOST_ARMS",
    "CellLimits",
    "CellResources",
    "CloneSupport",
    "Confinement",
    "Mount",
    "ProcessBounds",
    "RunPolicy",
    "Sandbox",
    "SandboxError",
    "SandboxKind",
    "Unmounted",
    "check_unsafe_host_request",
    "claude_environment",
    "collect_stale_cgroups",
    "create_sandbox",
    "enter_private_mounts",
    "exec_only_copy",
    "preflight",
    "private_mounts_refusal",
    "release_stale_mounts",
    "tool_environment",
    "unmount",
    "unsafe_host_warning",
    "write_runtime_dir",
]


class SandboxKind(StrEnum):
    BWRAP = "bwrap"
    HOST_UNSAFE = "host-unsafe"


class Sandbox(Protocol):
    """Runs commands against one clone under a per-call ``RunPolicy``."""

    kind: str
    workspace: Path

    def run(
        self,
        command: Sequence[str],
        *,
        policy: RunPolicy,
        timeout_s: float,
        env: Mapping[str, str] | None = None,
        stdin: bytes | None = None,
        max_stdout_bytes: int = ...,
        cancel: threading.Event | None = None,
        on_stdout_line: Callable[[bytes], None] | None = None,
    ) -> ProcessResult: ...


def create_sandbox(
    kind: SandboxKind,
    *,
    workspace: Path,
    claude_bin: Path | None,
    bwrap_bin: str,
    runtime_dir: Path | None = None,
    base_mounts: tuple[Mount, ...] = (),
    resources: ProcessBounds | None = None,
    exec_only_cli: bool = True,
) -> Sandbox:
    """A sandbox over ``workspace``; ``claude_bin``/``runtime_dir`` are needed only for CLI sessions.

    ``resources`` (a cell's ``CellResources``) puts every process it runs into the cell's bounds.
    """
    if kind is SandboxKind.BWRAP:
        return BwrapSandbox(
            workspace=workspace,
            claude_bin=claude_bin,
            runtime_dir=runtime_dir,
            base_mounts=base_mounts,
            bwrap_bin=bwrap_bin,
            resources=resources,
            exec_only_cli=exec_only_cli,
        )
    if kind is SandboxKind.HOST_UNSAFE:
        return HostSandbox(
            workspace=workspace,
            claude_bin=claude_bin,
            runtime_dir=runtime_dir,
            base_mounts=base_mounts,
            resources=resources,
        )
    raise SandboxError(f"unknown sandbox kind {kind!r}; known: {[k.value for k in SandboxKind]}")


def preflight(kind: SandboxKind, *, bwrap_bin: str = "bwrap") -> str:
    """Fail closed before any clone or model call; returns the backend binary path.

    ``host-unsafe`` only checks its tools (``setpriv``, ``prlimit``): it isolates nothing.
    """
    if kind is SandboxKind.BWRAP:
        return preflight_bwrap(bwrap_bin)
    if kind is SandboxKind.HOST_UNSAFE:
        return preflight_host()
    raise SandboxError(f"unknown sandbox kind {kind!r}")
