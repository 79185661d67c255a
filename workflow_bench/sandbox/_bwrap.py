"""Bubblewrap backend: builds the bwrap argv for one sandboxed process.

Owns the mount table and namespace flags. Every process the harness starts
against a clone (setup, the CLI, verify, the hidden oracle, git helpers)
runs through here, each in a fresh set of namespaces with a private HOME and
/tmp (tmpfs), so no two sessions share state and nothing outlives its run.

Identity: every process runs as ``SANDBOX_UID`` inside a user namespace. A cell's processes
share the cell's own namespace (``_userns``: for a root runner uid 1000 is a fresh unprivileged
host uid per cell, handed the clone; the namespace carries the cell's inotify/fanotify limits and
allows no nested namespace), entered with ``--userns`` on the fd the cell's wrapper opened. A
sandbox outside any cell (the preflight, the index build on a template) gets a fresh one with
``--unshare-user``, mapping the caller's uid. The CLI refuses bypass permission modes as uid 0,
and git's ownership check passes because the clone appears owned by uid 1000.
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

from ._confine import EXEC_ONLY_MODE
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
SETPRIV = "/usr/bin/setpriv"  # util-linux; drops a root runner's cell command to the cell uid
USERNS_FD = 3  # keep in sync with _limits.USERNS_FD (the cell wrapper opens the namespace there)
# bwrap 0.8 leaves the --userns fd open into the sandbox (measured): closed before the command.
_CLOSE_USERNS_FD = ("/bin/sh", "-c", f'exec "$0" "$@" {USERNS_FD}<&-')
# Directories bwrap creates for bind targets: as uid 0 of a root runner's cell namespace it makes
# them 0700 (measured: /opt, /home/agent/.claude), which the cell uid could not enter; each
# missing parent of a mount target is made 0755 first, explicitly (``_mount_parents``).
INSTALL_HINT = "install it with: sudo apt-get install -y bubblewrap"


class CellIdentity(Protocol):
    """The cell's user namespace (``_userns.CellUserNamespace``) as the argv builder needs it."""

    switches_uid: bool


class ProcessBounds(Protocol):
    """Puts a process into its cell's resource bounds (``CellResources``)."""

    def wrap(self, argv: list[str]) -> list[str]: ...

    def prlimit_args(self) -> tuple[str, ...]: ...

    def bwrap_args(self) -> tuple[str, ...]: ...

    def own_mounts(self, sources: Sequence[Path]) -> None: ...

    @property
    def userns(self) -> CellIdentity | None: ...


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
    # 1777: in a root runner's cell namespace bwrap makes the tmpfs as uid 0, not as the cell uid
    args = ["--perms", "1777", "--size", str(SCRATCH_TOP_BYTES), "--tmpfs", mount.target]
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
        exec_only_cli: bool = True,
    ) -> None:
        self.workspace = workspace
        self.exec_only_cli = exec_only_cli
        self.resources = resources
        self.base_mounts = base_mounts
        self.claude_bin = claude_bin
        self.runtime_dir = runtime_dir
        self.bwrap_bin = bwrap_bin

    def _identity(self) -> tuple[list[str], list[str]]:
        """(bwrap's identity options, the command's prefix) for this sandbox's user namespace."""
        userns = self.resources.userns if self.resources is not None else None
        if userns is None:
            # No nested user namespaces: inside one the agent would be "root"
            # and could try to remount what we bound read-only.
            ids = ["--unshare-user", "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID)]
            return [*ids, "--disable-userns"], []
        if not userns.switches_uid:  # 1000 is the caller already; the namespace allows no nested one
            ids = ["--userns", str(USERNS_FD), "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID)]
            return ids, list(_CLOSE_USERNS_FD)
        # Root runner: bwrap sets up as uid 0 of the namespace (host root, which reads the sources),
        # then setpriv becomes 1000 (the cell's host uid), which clears every capability.
        ids = ["--userns", str(USERNS_FD), "--uid", "0", "--gid", "0"]
        ids += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--cap-add", "CAP_SETPCAP"]
        become = [SETPRIV, "--reuid", str(SANDBOX_UID), "--regid", str(SANDBOX_UID), "--clear-groups"]
        become += ["--inh-caps=-all", "--bounding-set=-all", "--", *_CLOSE_USERNS_FD]
        return ids, become

    def _targets(self, policy: RunPolicy) -> list[str]:
        targets = [m.target for m in (*self.base_mounts, *policy.mounts)]
        if policy.with_claude:
            targets += [SANDBOX_CLAUDE_BIN, SANDBOX_RUNTIME_DIR, USER_SKILLS_DIR]
        return targets

    def argv(self, command: Sequence[str], *, policy: RunPolicy) -> list[str]:
        identity, become = self._identity()
        args = [
            self.bwrap_bin,
            *identity,
            "--unshare-pid",
            "--unshare-ipc",
            "--unshare-uts",
            "--unshare-cgroup-try",
            # Always: the CLI reaches the model only through the relay socket
            # (relay/server.py), so nothing in any sandbox needs a network interface.
            "--unshare-net",
            "--die-with-parent",
            "--new-session",
        ]
        if become:
            args += ["--perms", "0755", "--dir", "/etc"]  # see _mount_parents: bwrap would make it 0700
        args += _system_args()
        # Every writable filesystem is sized (an unsized tmpfs is half the host's RAM):
        # / and /dev become read-only below, /dev/shm and /run are small tmpfs.
        # Modes: in a cell's namespace of a root runner bwrap makes these as uid 0, not as 1000.
        args += ["--proc", "/proc", "--dev", "/dev"]
        args += ["--perms", "1777", "--size", str(SHM_SIZE_BYTES), "--tmpfs", "/dev/shm"]
        args += ["--perms", "1777", "--size", str(RUN_SIZE_BYTES), "--tmpfs", "/run"]
        args += ["--perms", "1777", "--size", str(TMP_SIZE_BYTES), "--tmpfs", SANDBOX_TMP]
        args += ["--size", str(HOME_SIZE_BYTES), "--tmpfs", "/home", "--perms", "0777", "--dir", SANDBOX_HOME]
        if self.resources is not None:
            args += self.resources.bwrap_args()  # the cell's seccomp filter and devpts instance
        if become:
            args += _mount_parents(self._targets(policy))
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
            binary = (
                exec_only_copy(self.claude_bin, self.runtime_dir) if self.exec_only_cli else self.claude_bin
            )
            args += ["--ro-bind", str(binary), SANDBOX_CLAUDE_BIN]
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
        return [*args, "--", *become, PRLIMIT, f"--fsize={MAX_FILE_BYTES}", *rlimits, "--", *command]

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
            self.resources.own_mounts([m.source for m in policy.mounts])
            argv = self.resources.wrap(argv)
        argv = die_with_runner(argv)
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


_COPY_LOCK = threading.Lock()
EXEC_ONLY_NAME = "exec-only-claude"


def exec_only_copy(claude_bin: Path, runtime_dir: Path) -> Path:
    """The CLI binary as the sandbox runs it: a copy no process of any cell may read (mode 0111).

    ``execve`` of a file its caller cannot read leaves the process non-dumpable (the kernel's
    ``would_dump``): its ``/proc/<pid>/environ``, ``mem``, ``fd/*`` become unreadable and
    ``ptrace``/``process_vm_readv`` fail for every process without ``CAP_SYS_PTRACE`` over it,
    whatever its uid, Landlock or not, and that holds for anything the CLI starts without the
    harness's prefix too. Owner bits are ``--x`` as well: for a non-root runner the cell uid *is*
    the owner, and the bind is read-only, so it cannot chmod it back. One copy per sweep, beside
    the runtime dir (~400 MB, 0.4 s), of the source the runner checked against the pinned digest
    (``claude_cli``, which reads the source, never this copy: a non-root runner cannot read it).
    """
    target = runtime_dir.parent / EXEC_ONLY_NAME / "claude"
    with _COPY_LOCK:
        if target.exists():
            return target
        target.parent.mkdir(mode=0o755, exist_ok=True)
        staging = target.with_name(f"claude.{os.getpid()}.tmp")
        shutil.copyfile(claude_bin, staging)
        staging.chmod(EXEC_ONLY_MODE)
        os.replace(staging, target)
    return target


# Runs as ``sh -c`` under ``setpriv --pdeathsig KILL``: $0 is the runner's pid.
_RUNNER_ALIVE = 'if [ "$PPID" = "$0" ]; then exec "$@"; fi; exit 125'


def die_with_runner(argv: Sequence[str]) -> list[str]:
    """``argv`` started so that it dies with this runner, even when the runner dies as it starts.

    bwrap's ``--die-with-parent`` arms ``PR_SET_PDEATHSIG`` only once bwrap runs: a runner
    SIGKILLed between its fork and that point left a sandbox behind (found by the kill -9 resume
    test under load). ``setpriv`` arms the signal first thing after the fork, and the shell then
    checks that the parent is still the runner (it was reparented otherwise: the runner died
    before the signal was armed) before it becomes ``argv``. The signal survives both execs
    (neither binary is set-uid or carries file capabilities).
    """
    return [SETPRIV, "--pdeathsig", "KILL", "--", "/bin/sh", "-c", _RUNNER_ALIVE, str(os.getpid()), *argv]


def _mount_parents(targets: Sequence[str]) -> list[str]:
    """``--perms 0755 --dir`` (0777 under HOME) for each parent of ``targets`` bwrap would make 0700.

    The workspace (owned by the cell uid) and the tmpfs mounts (own modes) are not touched.
    """
    args: list[str] = []
    made: set[str] = set()
    for target in targets:
        parts = target.strip("/").split("/")[:-1]
        for depth in range(1, len(parts) + 1):
            parent = "/" + "/".join(parts[:depth])
            skip = parent in made or parent in _OWN_MODES or parent.startswith(SANDBOX_WORKSPACE + "/")
            if not skip and parent != SANDBOX_WORKSPACE:
                # Under the private HOME the agent writes (the CLI's state dir): world-writable.
                mode = "0777" if parent.startswith(SANDBOX_HOME + "/") else "0755"
                args += ["--perms", mode, "--dir", parent]
                made.add(parent)
    return args


_OWN_MODES = frozenset({"/home", SANDBOX_HOME, "/run", SANDBOX_TMP, "/dev", "/dev/shm", "/usr", "/etc"})
"""Directories made with their own mode above (``/etc``: explicitly, before the system binds)."""


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
