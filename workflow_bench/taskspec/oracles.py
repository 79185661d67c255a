"""Hidden oracles: the immutable snapshot, its staging after the model exits, and the tamper check.

Owns three steps of the hidden-oracle lifecycle (reference harness §8, "Hidden-oracle isolation"):

1. ``capture_oracle`` reads a task's declared oracle files **once**, before any arm runs, into an
   in-memory ``OracleSnapshot``. Every later use stages these bytes, never the source files, so
   editing an oracle mid-sweep cannot change what later cells are judged by, and the digests in
   every row describe exactly what judged it.
2. ``stage_oracle`` (in ``oracle_staging``) writes the snapshot (files 0444, owned by a uid the
   sandbox does not map when run as root) into a fresh directory after every model process of a
   cell has exited; the cell mounts this per-run copy writable (frameworks write beside their
   config) and names it through ``WORKFLOW_BENCH_ORACLE_ROOT``.
3. ``verify_staged`` (in ``oracle_staging``) re-reads every staged byte after the oracle ran and
   raises ``OracleTamperError`` if an oracle file or directory changed or vanished.

Must never: follow a symlink when reading or writing oracle bytes, or put oracle bytes (or the
oracle's output) into an error message: errors end up in rows and logs that later agents can read.

The oracle's declaration parts (``OracleFileSpec``, ``OracleSpec``: the task file's ``oracle``
key) and the path rules live in ``oracle_spec``; this module imports nothing else of
``taskspec``: ``schema`` and ``spec`` import it, never the other way round.
Callers: ``taskspec.schema``/``taskspec.spec`` (declare, capture at load and bind time) and
``judging.judge`` (stage and verify).
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from .oracle_spec import (
    MAX_ORACLE_COMMAND_BYTES,
    MAX_ORACLE_FILES,
    OracleFileSpec,
    OracleSpec,
    command_problem,
    relative_path_problem,
    target_problem,
    target_set_problem,
)

__all__ = [  # the declaration parts, re-exported: judging and the tests know them from here
    "MAX_ORACLE_COMMAND_BYTES",
    "MAX_ORACLE_FILES",
    "OracleFileSpec",
    "OracleSpec",
    "command_problem",
    "relative_path_problem",
    "target_problem",
    "target_set_problem",
]

# Capture limits: an oracle is a handful of test files, so anything past these is a mistake or an
# attempt to smuggle data into the sandbox (the declaration's own limits are in ``oracle_spec``).
MAX_ORACLE_FILE_BYTES = 512 * 1024
MAX_ORACLE_TOTAL_BYTES = 2 * 1024 * 1024
# The staged copy is writable for the one run that uses it: test frameworks write beside their
# files (vite bundles `vitest.config.mts` to `vitest.config.mts.timestamp-<n>.mjs` next to it,
# pytest writes caches). Files are read-only and directories sticky and world-writable, and as
# root every staged entry is given to a uid the sandbox does not map (oracle_staging), so the
# run may add files but cannot change, replace or remove an oracle file; its bytes are
# re-checked after the run either way.
_STAGED_FILE_MODE = 0o444
_STAGED_DIR_MODE = 0o1777
STAGED_OWNER_UID = 65534  # "nobody": never the sandbox's mapped uid, never the host child uid
_DIGEST_DOMAIN = b"workflow-bench/oracle/v1"


class OracleCaptureError(ValueError):
    """The declared oracle cannot be captured. ``problems`` is ``((key, message), ...)``.

    Keys are relative to the task's ``oracle`` mapping (``files[0].source``, ``files``); the
    caller adds the file and task. Messages name paths and sizes, never contents.
    """

    def __init__(self, problems: Sequence[tuple[str, str]]) -> None:
        self.problems = tuple(problems)
        super().__init__("; ".join(f"{key}: {message}" for key, message in self.problems))

    def __reduce__(self) -> tuple[type[OracleCaptureError], tuple[tuple[tuple[str, str], ...]]]:
        return (type(self), (self.problems,))


class OracleTamperError(RuntimeError):
    """A staged oracle differs from its snapshot after it ran (names the path, never the bytes)."""


class OracleStageError(RuntimeError):
    """The staging destination is unusable (exists and is not an empty directory)."""


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _framed_digest(*fields: bytes) -> str:
    # Length framing: ("ab", "c") and ("a", "bc") must never hash alike.
    h = hashlib.sha256()
    for item in (_DIGEST_DOMAIN, *fields):
        h.update(len(item).to_bytes(8, "big"))
        h.update(item)
    return h.hexdigest()


@dataclass(frozen=True, slots=True)
class OracleFile:
    """One captured oracle file: where it is staged and its exact bytes."""

    target: str
    data: bytes
    sha256: str
    size: int

    def __post_init__(self) -> None:
        problem = target_problem(self.target) if isinstance(self.target, str) else "must be a string"
        if problem:
            raise ValueError(f"oracle target: {problem}")
        if not isinstance(self.data, bytes):
            raise ValueError(f"oracle file {self.target}: data must be bytes")
        if self.size != len(self.data) or self.sha256 != _sha256(self.data):
            raise ValueError(f"oracle file {self.target}: sha256/size do not describe its data")

    @classmethod
    def of(cls, target: str, data: bytes) -> OracleFile:
        return cls(target=target, data=data, sha256=_sha256(data), size=len(data))


@dataclass(frozen=True, slots=True)
class OracleSnapshot:
    """A task's hidden oracle, captured once: the command and the bytes of every file."""

    command: str
    files: tuple[OracleFile, ...]

    def __post_init__(self) -> None:
        problem = command_problem(self.command) if isinstance(self.command, str) else "must be a string"
        if problem:
            raise ValueError(f"oracle command: {problem}")
        if not isinstance(self.files, tuple) or not all(isinstance(f, OracleFile) for f in self.files):
            raise ValueError("oracle files must be a tuple of OracleFile")
        if not 1 <= len(self.files) <= MAX_ORACLE_FILES:
            raise ValueError(f"oracle needs 1 to {MAX_ORACLE_FILES} files, got {len(self.files)}")
        _check_target_set([f.target for f in self.files])
        total = sum(f.size for f in self.files)
        if total > MAX_ORACLE_TOTAL_BYTES:
            raise ValueError(f"oracle files total {total} bytes, limit {MAX_ORACLE_TOTAL_BYTES}")

    @property
    def digest(self) -> str:
        """Identity of the whole oracle: command plus every (target, content), target-sorted."""
        fields = [self.command.encode(), str(len(self.files)).encode()]
        for f in sorted(self.files, key=lambda f: f.target):
            fields += [f.target.encode(), f.data]
        return _framed_digest(b"oracle", *fields)

    @property
    def command_digest(self) -> str:
        return _framed_digest(b"command", self.command.encode())

    @property
    def manifest_digest(self) -> str:
        """Identity of the file set without the bytes: (target, sha256, size), target-sorted."""
        fields = []
        for f in sorted(self.files, key=lambda f: f.target):
            fields += [f.target.encode(), f.sha256.encode(), str(f.size).encode()]
        return _framed_digest(b"manifest", *fields)

    def manifest(self) -> list[dict[str, str | int]]:
        """``[{target, sha256, size}]`` in declaration order, for bindings and rows."""
        return [{"target": f.target, "sha256": f.sha256, "size": f.size} for f in self.files]


def _check_target_set(targets: Sequence[str]) -> None:
    problem = target_set_problem(targets)
    if problem:
        raise ValueError(f"oracle targets: {problem}")


def _normalized_parts(source: str) -> tuple[list[str] | None, str | None]:
    """Lexically resolve ``source`` below its root: (parts, None) or (None, why not)."""
    if not source or "\0" in source:
        return None, "must be a nonblank path without NUL"
    if source.startswith("/") or source.startswith("~"):
        return None, f"must be relative to the task file's directory, got {source!r}"
    parts: list[str] = []
    for part in source.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if not parts:
                return None, f"resolves outside the task file's directory: {source!r}"
            parts.pop()
        else:
            parts.append(part)
    if not parts:
        return None, f"does not name a file: {source!r}"
    return parts, None


def _file_identity(st: os.stat_result) -> tuple[int, ...]:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def read_beneath(root: Path, source: str, *, max_bytes: int) -> bytes:
    """Read the regular file ``root/source`` without following any symlink below ``root``.

    Every directory component is opened with ``O_NOFOLLOW`` relative to its parent's descriptor,
    so a symlinked parent cannot redirect the read, and the file is checked not to have changed
    while it was read. Raises ``ValueError`` with the reason (never the contents).
    """
    parts, why = _normalized_parts(source)
    if parts is None:
        raise ValueError(why)
    dir_flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as err:
        raise ValueError(f"task file directory {root} is unreadable: {err.strerror}") from None
    try:
        for i, part in enumerate(parts[:-1]):
            fd = _descend(fd, part, "/".join(parts[: i + 1]), dir_flags)
        # O_NONBLOCK: opening a FIFO planted at the path must fail the type check, not hang.
        file_flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
        fd = _descend(fd, parts[-1], "/".join(parts), file_flags)
        before = os.fstat(fd)
        if not stat.S_ISREG(before.st_mode):
            raise ValueError(f"{source!r} is not a regular file")
        if before.st_size > max_bytes:
            raise ValueError(f"{source!r} is {before.st_size} bytes, limit {max_bytes}")
        chunks, size = [], 0
        while chunk := os.read(fd, 1 << 16):
            chunks.append(chunk)
            size += len(chunk)
            if size > max_bytes:
                raise ValueError(f"{source!r} grew past {max_bytes} bytes while it was read")
        after = os.fstat(fd)
        data = b"".join(chunks)
        if _file_identity(before) != _file_identity(after) or len(data) != after.st_size:
            raise ValueError(f"{source!r} changed while it was read; retry when it is stable")
        return data
    finally:
        os.close(fd)


def _open_at(dir_fd: int, name: str, where: str, flags: int) -> int:
    """Open ``name`` under ``dir_fd``, explaining symlinks and absences in the error."""
    try:
        return os.open(name, flags, dir_fd=dir_fd)
    except OSError as err:
        try:
            st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        except OSError:
            st = None
        if st is not None and stat.S_ISLNK(st.st_mode):
            raise ValueError(f"{where!r} is a symlink; oracle files and their parents must not be") from None
        if st is None:
            raise ValueError(f"{where!r} does not exist") from None
        raise ValueError(f"{where!r} cannot be opened: {err.strerror}") from None


def _descend(dir_fd: int, name: str, where: str, flags: int) -> int:
    """``_open_at`` that hands ownership over: closes ``dir_fd`` only once ``name`` is open.

    On failure ``dir_fd`` stays open and stays the caller's to close, so no descriptor is ever
    closed twice (a double close can close an unrelated descriptor another thread just opened).
    """
    opened = _open_at(dir_fd, name, where, flags)
    os.close(dir_fd)
    return opened


def read_oracle_sources(files: Sequence[OracleFileSpec], *, task_file_dir: Path) -> tuple[bytes, ...]:
    """Read each declared ``source`` once (relative to ``task_file_dir``), enforcing the limits.

    Raises ``OracleCaptureError`` listing every problem, keyed like ``files[1].source``.
    """
    problems: list[tuple[str, str]] = []
    contents: list[bytes] = []
    for i, declared in enumerate(files):
        try:
            contents.append(read_beneath(task_file_dir, declared.source, max_bytes=MAX_ORACLE_FILE_BYTES))
        except ValueError as err:
            problems.append((f"files[{i}].source", str(err)))
    total = sum(len(data) for data in contents)
    if total > MAX_ORACLE_TOTAL_BYTES:
        problems.append(("files", f"oracle files total {total} bytes, limit {MAX_ORACLE_TOTAL_BYTES}"))
    if problems:
        raise OracleCaptureError(problems)
    return tuple(contents)


def capture_oracle(spec: OracleSpec, *, task_file_dir: Path) -> OracleSnapshot:
    """Read every declared oracle file once (relative to ``task_file_dir``) into a snapshot.

    Enforces the per-file and total size limits and the no-symlink rule. Raises
    ``OracleCaptureError`` listing every problem found, keyed like ``files[1].source``.
    """
    contents = read_oracle_sources(spec.files, task_file_dir=task_file_dir)
    captured = tuple(OracleFile.of(f.target, data) for f, data in zip(spec.files, contents, strict=True))
    try:
        return OracleSnapshot(command=spec.command, files=captured)
    except ValueError as err:
        raise OracleCaptureError([("files", str(err))]) from None
