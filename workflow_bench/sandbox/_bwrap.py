"""Bubblewrap backend: builds the bwrap argv for one sandboxed process.

Owns the mount table and namespace flags. Every process the harness starts
against a clone (setup, the CLI, verify, the hidden oracle, git helpers)
runs through here, each in a fresh set of namespaces with a private HOME and
/tmp (tmpfs), so no two sessions share state and nothing outlives its run.

Identity: bwrap maps the caller's uid to ``SANDBOX_UID`` inside a user
namespace. The CLI refuses bypass permission modes as uid 0, and git's
ownership check passes because the root-owned clone appears owned by the
mapped uid.
"""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from workflow_bench.process import ProcessResult, run_process

from ._environment import (
    EMPTY_DIR_NAME,
    HOME_SIZE_BYTES,
    MAX_FILE_BYTES,
    RUN_SIZE_BYTES,
    SANDBOX_CLAUDE_BIN,
    SANDBOX_HOME,
    SANDBOX_RUNTIME_DIR,
    SANDBOX_TMP,
    SANDBOX_UID,
    SANDBOX_WORKSPACE,
    SHM_SIZE_BYTES,
    TMP_SIZE_BYTES,
    USER_SKILLS_DIR,
    tool_environment,
)

# System paths visible read-only. /etc is NOT bound whole: inside the user
# namespace the sandbox uid owns every host root-owned file, so a whole-/etc
# bind would expose root-only files such as /etc/shadow to the agent.
_ETC_ALLOWLIST = (
    "/etc/alternatives",
    "/etc/ssl",
    "/etc/ca-certificates",
    "/etc/hosts",
    "/etc/resolv.conf",
    "/etc/nsswitch.conf",
    "/etc/passwd",
    "/etc/group",
    "/etc/ld.so.cache",
    "/etc/localtime",
)
_MERGED_USR_LINKS = (("usr/bin", "/bin"), ("usr/lib", "/lib"), ("usr/lib64", "/lib64"), ("usr/sbin", "/sbin"))
PREFLIGHT_TIMEOUT_S = 10
PRLIMIT = "/usr/bin/prlimit"  # util-linux; sets RLIMIT_FSIZE for the sandboxed tree
INSTALL_HINT = "install it with: sudo apt-get install -y bubblewrap"


class ProcessBounds(Protocol):
    """Puts a process into its cell's resource bounds (``CellResources``)."""

    def wrap(self, argv: list[str]) -> list[str]: ...

    def prlimit_args(self) -> tuple[str, ...]: ...


class SandboxError(RuntimeError):
    """The sandbox could not be built or verified; nothing may run unsandboxed instead."""


@dataclass(frozen=True, slots=True)
class Mount:
    """A host path bound into the sandbox (read-only unless ``writable``).

    ``scratch_top``: a directory whose entries are bound read-only under a small tmpfs of this
    process's own, so tools may write beside them (vite bundles a config into
    ``node_modules/.vite-temp``, test runners keep caches in ``node_modules/.cache``) while every
    package stays read-only and nothing written outlives the process (task dependency trees).
    """

    source: Path
    target: str
    writable: bool = False
    scratch_top: bool = False


# A dependency tree's writable top: vite's bundled config is a few kB and test-runner caches a
# few MB; a tree with more top-level entries than this is bound whole (read-only) instead, which
# keeps bwrap's argv and mount count bounded (a node_modules of 1 000 packages has ~600 entries).
SCRATCH_TOP_BYTES = 64 * 1024 * 1024
MAX_SCRATCH_TOP_ENTRIES = 2000
# Tool caches a host run leaves at a dependency tree's top: never bound, so each process starts
# them empty and may write them (a bound stale `.vite-temp` is read-only and fails vite's start).
SCRATCH_CACHE_NAMES = frozenset({".vite-temp", ".vite", ".cache"})


def _mount_args(mount: Mount) -> list[str]:
    if not mount.scratch_top or mount.writable:
        return ["--bind" if mount.writable else "--ro-bind", str(mount.source), mount.target]
    try:
        with os.scandir(mount.source) as scan:
            entries = sorted((e.name, e.is_symlink()) for e in scan)
    except OSError:
        entries = None
    if entries is None or len(entries) > MAX_SCRATCH_TOP_ENTRIES:
        return ["--ro-bind", str(mount.source), mount.target]
    args = ["--size", str(SCRATCH_TOP_BYTES), "--tmpfs", mount.target]
    for name, is_link in entries:
        if name in SCRATCH_CACHE_NAMES:
            continue
        source, target = f"{mount.source}/{name}", f"{mount.target}/{name}"
        if is_link:
            args += ["--symlink", os.readlink(source), target]
        else:
            args += ["--ro-bind", source, target]
    return args


@dataclass(frozen=True, slots=True)
class RunPolicy:
    """What one sandboxed process may touch beyond the fixed base (system, private HOME and /tmp)."""

    workspace_writable: bool
    mounts: tuple[Mount, ...] = ()
    with_claude: bool = False


def _system_args() -> list[str]:
    args = ["--ro-bind", "/usr", "/usr"]
    for source, target in _MERGED_USR_LINKS:
        if Path("/" + source).exists():
            args += ["--symlink", source, target]
    for path in _ETC_ALLOWLIST:
        if Path(path).exists():
            args += ["--ro-bind", path, path]
    return args


class BwrapSandbox:
    """Runs commands against one clone. Holds no per-process state; thread-safe."""

    kind = "bwrap"

    def __init__(
        self,
        *,
        workspace: Path,
        claude_bin: Path | None = None,
        runtime_dir: Path | None = None,
        base_mounts: tuple[Mount, ...] = (),
        bwrap_bin: str = "bwrap",
        resources: ProcessBounds | None = None,
    ) -> None:
        self.workspace = workspace
        self.resources = resources
        self.base_mounts = base_mounts
        self.claude_bin = claude_bin
        self.runtime_dir = runtime_dir
        self.bwrap_bin = bwrap_bin

    def argv(self, command: Sequence[str], *, policy: RunPolicy) -> list[str]:
        args = [
            self.bwrap_bin,
            "--unshare-user",
            "--uid",
            str(SANDBOX_UID),
            "--gid",
            str(SANDBOX_UID),
            "--unshare-pid",
            "--unshare-ipc",
            "--unshare-uts",
            "--unshare-cgroup-try",
            # Always: the CLI reaches the model only through the relay socket
            # (relay/server.py), so nothing in any sandbox needs a network interface.
            "--unshare-net",
            # No nested user namespaces: inside one the agent would be "root"
            # and could try to remount what we bound read-only.
            "--disable-userns",
            "--die-with-parent",
            "--new-session",
        ]
        args += _system_args()
        # Every writable filesystem is sized (an unsized tmpfs is half the host's RAM):
        # / and /dev become read-only below, /dev/shm and /run are small tmpfs.
        args += ["--proc", "/proc", "--dev", "/dev", "--size", str(SHM_SIZE_BYTES), "--tmpfs", "/dev/shm"]
        args += ["--size", str(RUN_SIZE_BYTES), "--tmpfs", "/run"]
        args += ["--size", str(TMP_SIZE_BYTES), "--tmpfs", SANDBOX_TMP]
        args += ["--size", str(HOME_SIZE_BYTES), "--tmpfs", "/home", "--dir", SANDBOX_HOME]
        args += [
            "--bind" if policy.workspace_writable else "--ro-bind",
            str(self.workspace),
            SANDBOX_WORKSPACE,
        ]
        for mount in self.base_mounts:  # e.g. read-only task dependency trees inside the workspace
            args += _mount_args(mount)
        if policy.with_claude:
            if self.claude_bin is None or self.runtime_dir is None:
                raise SandboxError("no Claude Code binary or runtime dir configured for this sandbox")
            args += ["--ro-bind", str(self.claude_bin), SANDBOX_CLAUDE_BIN]
            args += ["--ro-bind", str(self.runtime_dir), SANDBOX_RUNTIME_DIR]
            # An immutable, empty user-level skills dir: a skill the agent
            # writes under $HOME can never shadow the evaluated one.
            args += ["--ro-bind", str(self.runtime_dir / EMPTY_DIR_NAME), USER_SKILLS_DIR]
        for mount in policy.mounts:
            args += ["--bind" if mount.writable else "--ro-bind", str(mount.source), mount.target]
        # Last, after every mount point was created in them: bwrap's root and /dev
        # are unsized tmpfs otherwise writable by the sandbox uid.
        args += ["--remount-ro", "/", "--remount-ro", "/dev"]
        args += ["--chdir", SANDBOX_WORKSPACE]
        rlimits = self.resources.prlimit_args() if self.resources is not None else ()
        return [*args, "--", PRLIMIT, f"--fsize={MAX_FILE_BYTES}", *rlimits, "--", *command]

    def run(
        self,
        command: Sequence[str],
        *,
        policy: RunPolicy,
        timeout_s: float,
        env: Mapping[str, str] | None = None,
        stdin: bytes | None = None,
        max_stdout_bytes: int = 8 * 1024 * 1024,
        cancel: threading.Event | None = None,
        on_stdout_line: Callable[[bytes], None] | None = None,
    ) -> ProcessResult:
        argv = self.argv(command, policy=policy)
        if self.resources is not None:
            argv = self.resources.wrap(argv)
        # The environment travels as bwrap's own environment (exactly the
        # allowlist; bwrap passes it through unchanged), never as --setenv
        # arguments: argv is readable by every process in the sandbox through
        # /proc/1/cmdline, and the hunt test found the model key there.
        return run_process(
            argv,
            timeout_s=timeout_s,
            env=tool_environment() if env is None else env,
            stdin=stdin,
            max_stdout_bytes=max_stdout_bytes,
            cancel=cancel,
            on_stdout_line=on_stdout_line,
        )


def preflight_bwrap(bwrap_bin: str = "bwrap") -> str:
    """Fail closed unless bwrap exists and can create every namespace we use.

    Returns the resolved bwrap path. Runs before any clone or model call.
    """
    resolved = shutil.which(bwrap_bin)
    if resolved is None:
        raise SandboxError(f"bubblewrap ({bwrap_bin!r}) was not found on PATH; {INSTALL_HINT}")
    probe = Path("/")
    sandbox = BwrapSandbox(workspace=probe, bwrap_bin=resolved)
    argv = sandbox.argv(["/usr/bin/true"], policy=RunPolicy(workspace_writable=False))
    result = run_process(argv, timeout_s=PREFLIGHT_TIMEOUT_S, env={"PATH": "/usr/bin:/bin"})
    if not result.ok:
        raise SandboxError(
            "bubblewrap cannot create the sandbox namespaces (user, pid, net, ipc, uts): "
            f"{result.describe()}; check that unprivileged user namespaces are enabled, or {INSTALL_HINT}"
        )
    return resolved
