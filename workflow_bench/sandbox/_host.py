"""Host-unsafe backend: runs every command directly on the host. NOT a security boundary.

For operators without bubblewrap, and only for the paired review arms (the
runner enforces that and refuses it whenever ``CI`` is set). There is no
filesystem, network or PID isolation: the agent's tools can read anything
the child uid can read, reach any address, and see and signal host
processes. What this backend does keep:

- the sandbox's path vocabulary. Sandbox paths (``/workspace``, the CLI under
  ``/opt/claude``, ``/home/agent``, ``/tmp`` and every mount target) are
  rewritten to host paths in argv, in environment values and in stdin, at
  path boundaries only (``/workspace2`` is left alone). Nothing read back
  (stdout, transcripts) is rewritten, so rows show host paths;
- the allowlisted environment (never ``os.environ``), a private per-cell HOME
  and tmp, and the per-file size limit;
- when the runner is root: every child runs as ``HOST_CHILD_UID`` (nobody)
  through ``setpriv``; the clone is handed to that uid only while a policy
  makes the workspace writable, and otherwise belongs to the invoking uid
  with every write bit dropped (exact modes restored afterwards, so the
  workspace snapshots before and after a review stay byte-identical).

Mount targets inside the workspace cannot be overlaid on the host: a mount
whose host source is not already the clone's own path there is refused
(``SandboxError``), never silently skipped.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import stat
import tempfile
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from types import MappingProxyType

from workflow_bench.input_files import bounded_walk
from workflow_bench.process import ProcessResult, run_process

from ._bwrap import PRLIMIT, Mount, ProcessBounds, RunPolicy, SandboxError
from ._environment import (
    BASE_ENVIRONMENT,
    MAX_FILE_BYTES,
    SANDBOX_CLAUDE_BIN,
    SANDBOX_HOME,
    SANDBOX_RUNTIME_DIR,
    SANDBOX_TMP,
    SANDBOX_WORKSPACE,
    SHELL_PREFIX,
    USER_SKILLS_DIR,
    shell_prefix_script,
    tool_environment,
)

BACKEND_NAME = "host-unsafe"  # keep in sync with SandboxKind.HOST_UNSAFE (tests/unit/test_no_drift.py checks)
HOST_CHILD_UID = 65534  # nobody/nogroup: owns nothing on the host the harness did not give it
SETPRIV = "/usr/bin/setpriv"  # util-linux
# git refuses a repository owned by another uid ("dubious ownership"); the
# clone changes owner between phases, so every child trusts every directory.
GIT_SAFE_DIRECTORY = MappingProxyType(
    {"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "safe.directory", "GIT_CONFIG_VALUE_0": "*"}
)
DROP_PRIVILEGES = (SETPRIV, f"--reuid={HOST_CHILD_UID}", f"--regid={HOST_CHILD_UID}", "--clear-groups", "--")
_WRITE_BITS = stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH
_BIN_LOCK = threading.Lock()  # cells share one per-sweep copy of the CLI binary


class PathMap:
    """Rewrites sandbox path prefixes to host paths, only where a whole path component matches.

    A prefix matches when it is not preceded by a path character (so
    ``./workspace`` and ``a/workspace`` stay) and not followed by one (so
    ``/workspace2`` and ``/workspace.bak`` stay; a sentence-ending ``.`` is
    not a path character). The longest prefix wins.
    """

    def __init__(self, mapping: Mapping[str, str]) -> None:
        self.mapping = dict(mapping)
        prefixes = sorted(self.mapping, key=len, reverse=True)
        alternatives = "|".join(re.escape(p) for p in prefixes) or r"(?!)"
        self._pattern = re.compile(rf"(?<![\w./-])(?:{alternatives})(?![\w-]|\.[\w.-])")

    def text(self, value: str) -> str:
        return self._pattern.sub(lambda m: self.mapping[m.group(0)], value)

    def data(self, value: bytes) -> bytes:
        return self.text(value.decode("utf-8", "surrogateescape")).encode("utf-8", "surrogateescape")


def _is_root() -> bool:
    return os.geteuid() == 0


def _walk(root: Path) -> Iterator[str]:
    """``root`` and everything under it, never following symlinks."""
    yield str(root)
    if root.is_symlink() or not root.is_dir():
        return
    # bounded_walk: iterative (an agent's 3,000-deep chain must not recurse); bounds past any snapshot's.
    for _, full, _ in bounded_walk(root, max_entries=10_000_000, max_depth=4096):
        yield full


def _chown_tree(root: Path, uid: int) -> None:
    for path in _walk(root):
        os.chown(path, uid, uid, follow_symlinks=False)


def _drop_write_bits(root: Path) -> list[tuple[str, int]]:
    """Remove every write bit from the dirs and regular files under ``root``; return their old modes."""
    saved = []
    for path in _walk(root):
        st = os.lstat(path)
        if (stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode)) and st.st_mode & _WRITE_BITS:
            saved.append((path, stat.S_IMODE(st.st_mode)))
            os.chmod(path, stat.S_IMODE(st.st_mode) & ~_WRITE_BITS)
    return saved


def _grant_traversal(path: Path) -> None:
    """Let the child uid reach ``path``: add o+x to harness temp dirs above it, else fail.

    Only directories the invoking uid owns inside the system temp dir are
    changed (search only, no listing); anything else unreachable is an error
    that names the directory.
    """
    temp_root = Path(tempfile.gettempdir()).resolve()
    for ancestor in reversed(path.resolve().parents):
        st = ancestor.stat()
        if st.st_mode & stat.S_IXOTH:
            continue
        if ancestor.is_relative_to(temp_root) and ancestor != temp_root and st.st_uid == os.geteuid():
            ancestor.chmod(stat.S_IMODE(st.st_mode) | stat.S_IXOTH)
            continue
        raise SandboxError(
            f"uid {HOST_CHILD_UID} cannot reach {path}: {ancestor} is not searchable by others; "
            "move it under a searchable directory"
        )


class HostSandbox:
    """Runs commands on the host with sandbox paths translated. Not a security boundary."""

    kind = BACKEND_NAME

    def __init__(
        self,
        *,
        workspace: Path,
        claude_bin: Path | None = None,
        runtime_dir: Path | None = None,
        base_mounts: tuple[Mount, ...] = (),
        private_root: Path | None = None,
        resources: ProcessBounds | None = None,
    ) -> None:
        self.workspace = workspace
        self.resources = resources
        self.claude_bin = claude_bin
        self.runtime_dir = runtime_dir
        self.base_mounts = base_mounts
        self.private_root = private_root or workspace.with_name(f"{workspace.name}.host")
        self.home = self.private_root / "home"
        self.tmp = self.private_root / "tmp"
        self.shell_prefix = self.private_root / "shell-prefix"
        self.drops_privileges = _is_root()
        self._prepared = False

    # ── paths ──────────────────────────────────────────────────────────────

    def path_map(self, policy: RunPolicy) -> PathMap:
        """The sandbox → host translation for one run under ``policy``."""
        mapping = {
            SANDBOX_WORKSPACE: str(self.workspace),
            SANDBOX_HOME: str(self.home),
            SANDBOX_TMP: str(self.tmp),
            SHELL_PREFIX: str(self.shell_prefix),
        }
        if self.runtime_dir is not None:
            mapping[SANDBOX_RUNTIME_DIR] = str(self.runtime_dir)
        if self.claude_bin is not None:
            mapping[SANDBOX_CLAUDE_BIN] = str(self.claude_bin)
        for mount in (*self.base_mounts, *policy.mounts):
            mapping[mount.target] = str(mount.source)
        return PathMap(mapping)

    def _check_mounts(self, mounts: Sequence[Mount]) -> None:
        for mount in mounts:
            if mount.target == SANDBOX_WORKSPACE or mount.target.startswith(SANDBOX_WORKSPACE + "/"):
                inside = self.workspace / mount.target[len(SANDBOX_WORKSPACE) :].lstrip("/")
                if Path(os.path.abspath(mount.source)) != Path(os.path.abspath(inside)):
                    raise SandboxError(
                        f"the host-unsafe backend cannot overlay {mount.source} on {mount.target} "
                        "(no mount namespace); this arm or task needs bubblewrap"
                    )

    # ── lifecycle ──────────────────────────────────────────────────────────

    def _prepare(self, policy: RunPolicy) -> None:
        """Create the private HOME/tmp once; give them to the child uid; make the inputs reachable."""
        if not self._prepared:
            self.private_root.mkdir(mode=0o755, parents=True, exist_ok=True)
            for private in (self.home, self.tmp):
                private.mkdir(mode=0o700, exist_ok=True)
            # An empty user-level skills dir the child cannot write (owned by the
            # invoking uid): a skill written under $HOME cannot shadow the evaluated one.
            user_skills = self.home / USER_SKILLS_DIR.removeprefix(SANDBOX_HOME + "/")
            user_skills.parent.mkdir(exist_ok=True)
            user_skills.mkdir(mode=0o555, exist_ok=True)
            environment = PathMap({SANDBOX_HOME: str(self.home), SANDBOX_TMP: str(self.tmp)})
            assignments = {k: environment.text(v) for k, v in BASE_ENVIRONMENT.items()}
            self.shell_prefix.write_text(shell_prefix_script({**assignments, **GIT_SAFE_DIRECTORY}))
            self.shell_prefix.chmod(0o555)
            if self.drops_privileges:
                os.chown(self.home, HOST_CHILD_UID, HOST_CHILD_UID)
                os.chown(user_skills.parent, HOST_CHILD_UID, HOST_CHILD_UID)
                os.chown(self.tmp, HOST_CHILD_UID, HOST_CHILD_UID)
            self._prepared = True
        if not self.drops_privileges:
            return
        for needed in (self.workspace, self.private_root, *(m.source for m in policy.mounts)):
            _grant_traversal(needed)
        if policy.with_claude and self.runtime_dir is not None and self.claude_bin is not None:
            _grant_traversal(self.runtime_dir)
            self.claude_bin = self._reachable_claude(self.claude_bin, self.runtime_dir)

    @staticmethod
    def _reachable_claude(claude_bin: Path, runtime_dir: Path) -> Path:
        """The CLI binary where the child uid can execute it (it often lives under a 0700 HOME).

        One hard link (a copy across filesystems) per sweep, next to the runtime dir.
        """
        target = runtime_dir.parent / "host-claude" / "claude"
        if claude_bin == target:
            return target
        with _BIN_LOCK:
            if not target.exists():
                target.parent.mkdir(mode=0o755, exist_ok=True)
                staging = target.with_name(f"claude.{os.getpid()}.tmp")
                try:
                    os.link(claude_bin, staging)
                except OSError:
                    shutil.copy2(claude_bin, staging)
                os.replace(staging, target)
        _grant_traversal(target)
        return target

    @contextlib.contextmanager
    def _ownership(self, policy: RunPolicy) -> Iterator[None]:
        """Hand out write access for one run, and take it back (exact modes restored) afterwards."""
        invoker = os.geteuid()
        restore: list[tuple[str, int]] = []
        locked = [] if policy.workspace_writable else [self.workspace]
        cell_dir = self.workspace.parent
        for mount in policy.mounts:
            if mount.writable:
                if self.drops_privileges:
                    _chown_tree(mount.source, HOST_CHILD_UID)
            elif mount.source.resolve().is_relative_to(cell_dir.resolve()):
                locked.append(mount.source)  # per-cell dirs (review output, relay, oracle): read-only now
        try:
            if policy.workspace_writable and self.drops_privileges:
                _chown_tree(self.workspace, HOST_CHILD_UID)
            for path in locked:
                if self.drops_privileges:
                    _chown_tree(path, invoker)
                restore += _drop_write_bits(path)
            yield
        finally:
            for locked_path, mode in reversed(restore):
                os.chmod(locked_path, mode)

    # ── run ────────────────────────────────────────────────────────────────

    def argv(self, command: Sequence[str], *, policy: RunPolicy) -> list[str]:
        paths = self.path_map(policy)
        prefix = DROP_PRIVILEGES if self.drops_privileges else ()
        return [*prefix, PRLIMIT, f"--fsize={MAX_FILE_BYTES}", "--", *(paths.text(a) for a in command)]

    def environment(self, env: Mapping[str, str] | None, *, policy: RunPolicy) -> dict[str, str]:
        paths = self.path_map(policy)
        given = tool_environment() if env is None else env
        return {**{key: paths.text(value) for key, value in given.items()}, **GIT_SAFE_DIRECTORY}

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
        self._check_mounts((*self.base_mounts, *policy.mounts))
        if policy.with_claude and (self.claude_bin is None or self.runtime_dir is None):
            raise SandboxError("no Claude Code binary or runtime dir configured for this sandbox")
        self._prepare(policy)
        argv = self.argv(command, policy=policy)
        if self.resources is not None:
            argv = self.resources.wrap(argv)
        child_env = self.environment(env, policy=policy)
        child_stdin = None if stdin is None else self.path_map(policy).data(stdin)
        with self._ownership(policy):
            return run_process(
                argv,
                timeout_s=timeout_s,
                cwd=self.workspace,
                env=child_env,
                stdin=child_stdin,
                max_stdout_bytes=max_stdout_bytes,
                cancel=cancel,
                on_stdout_line=on_stdout_line,
            )


def preflight_host() -> str:
    """Fail closed unless the tools this backend relies on exist; returns the privilege-drop tool."""
    needed = [PRLIMIT, SETPRIV] if _is_root() else [PRLIMIT]
    missing = [tool for tool in needed if not Path(tool).is_file()]
    if missing:
        raise SandboxError(f"the host-unsafe backend needs {', '.join(missing)} (util-linux)")
    return needed[-1]


# --unsafe-no-bwrap: the only arms it may run (the paired review arms: read-only workspace,
# artifact outside it), and the warning it prints. Keep in sync with the Isolation docs
# (tests/unit/test_no_drift.py checks they name the flag and every arm).
UNSAFE_HOST_ARMS = frozenset({"ce_review", "review", "candidate_review"})
UNSAFE_HOST_WARNING = (
    "WARNING: --unsafe-no-bwrap runs every process directly on this host as "
    "{who}. This is NOT a security boundary: no filesystem, network or PID isolation. "
    "The agent's tools can read what that uid can read, reach any address and see host processes."
)


def check_unsafe_host_request(arms: Sequence[str], *, canary: bool) -> None:
    """``--unsafe-no-bwrap``: never under CI, only the paired review arms, never with the canary."""
    if os.environ.get("CI"):
        raise SandboxError("--unsafe-no-bwrap is refused when CI is set: CI must run inside bubblewrap")
    if set(arms) != UNSAFE_HOST_ARMS:
        raise SandboxError(
            f"--unsafe-no-bwrap only runs the paired review arms ({' '.join(sorted(UNSAFE_HOST_ARMS))}), "
            f"got --arms {' '.join(arms)}"
        )
    if canary:
        raise SandboxError("--canary tests the bubblewrap boundary; it cannot run with --unsafe-no-bwrap")


def unsafe_host_warning() -> str:
    """The warning naming the uid every host child runs as."""
    who = f"uid {HOST_CHILD_UID} (dropped from root)" if os.geteuid() == 0 else f"uid {os.geteuid()}"
    return UNSAFE_HOST_WARNING.format(who=who)
