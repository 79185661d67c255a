"""Owned, bounded subprocess execution — the only place that spawns processes.

Owns: starting a child in its own process group, feeding stdin, capturing
stdout completely up to a cap (overflow is reported, never silently
truncated), keeping a bounded stderr tail, enforcing a wall-clock timeout and
honouring the sweep's cancellation event by killing the whole group.

Never raises for the child's behaviour: a timeout, a cancellation or a
spawn failure is a ``ProcessResult.state``, so callers record it as data.
Everything in the sweep that runs a program (git, bwrap, the CLI) goes
through ``run_process``; ruff bans ``subprocess.Popen`` elsewhere.
"""

from __future__ import annotations

import contextlib
import math
import os
import select
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

ProcessState = Literal["exited", "timeout", "cancelled", "spawn-failure"]

# Twice the 2000-char error_detail tail the reference keeps (sessions trims to
# that): enough to read a Python traceback's last frames, small enough to keep rows readable.
STDERR_TAIL_BYTES = 4000
# After SIGTERM a process group gets this long before SIGKILL. The CLI flushes
# its final events within ~1 s when terminated (measured on 2.1.332).
TERMINATE_GRACE_S = 3.0
# How often a wait with a cancellation event looks at it. The child's exit itself wakes the wait
# at once (a pidfd): a 50 ms sleep between exit polls used to cost 13 of a cell's 18 subprocesses
# 50-57 ms each whatever they did (0.53 s of the demo's 2.2 s per cell; issue 26).
CANCEL_CHECK_S = 0.05


@dataclass(frozen=True, slots=True)
class ProcessResult:
    """What one child process did. ``returncode`` is None unless it exited."""

    argv: tuple[str, ...]
    state: ProcessState
    returncode: int | None
    stdout: bytes
    stdout_overflow: bool
    stderr_tail: str
    duration_s: float
    detail: str = ""
    reader_error: str = ""
    """Why a pipe reader or the stdout observer failed (empty when both finished cleanly)."""

    @property
    def ok(self) -> bool:
        return self.state == "exited" and self.returncode == 0

    def describe(self) -> str:
        """One-line reason, for error details (never includes stdout)."""
        if self.state == "exited":
            return f"exit {self.returncode}: {self.stderr_tail[-1500:]}{self._reader_note()}".rstrip()
        return f"{self.state}: {self.detail or self.stderr_tail[-1500:]}{self._reader_note()}".rstrip()

    def _reader_note(self) -> str:
        return f" [{self.reader_error}]" if self.reader_error else ""


def _drain(stream, sink: bytearray, *, cap: int, keep_tail: bool, flags: dict, on_line) -> None:
    """Copy ``stream`` into ``sink`` (bounded) and hand complete lines to ``on_line``.

    Never dies silently: a failure (of the read or of ``on_line``) is recorded
    in ``flags["reader_error"]`` and the rest of the stream is still drained,
    so the child never blocks on a full pipe. The line buffer holds at most
    ``cap`` bytes (a longer line is dropped, not observed) and every byte is
    scanned once: linear time, bounded memory.
    """
    pending = bytearray()
    skipping = False  # inside a line that outgrew the cap: drop until its newline
    try:
        for chunk in iter(lambda: stream.read1(65536), b""):
            if keep_tail:
                sink.extend(chunk)
                if len(sink) > cap:
                    del sink[: len(sink) - cap]
            elif len(sink) + len(chunk) > cap:
                sink.extend(chunk[: max(0, cap - len(sink))])
                flags["overflow"] = True
            else:
                sink.extend(chunk)
            if on_line is None:
                continue
            start = 0
            while (end := chunk.find(b"\n", start)) != -1:
                if not skipping:
                    pending += chunk[start:end]
                    if len(pending) <= cap:
                        _observe(on_line, bytes(pending), flags)
                pending.clear()
                skipping = False
                start = end + 1
            if not skipping:
                pending += chunk[start:]
                if len(pending) > cap:
                    pending.clear()
                    skipping = True
    except Exception as exc:  # a reader must report, never vanish: the result carries it
        flags.setdefault("reader_error", f"reader failed: {type(exc).__name__}: {exc}")
        with contextlib.suppress(Exception):
            for _ in iter(lambda: stream.read1(65536), b""):
                pass
    finally:
        with contextlib.suppress(OSError):
            stream.close()


def _observe(on_line, line: bytes, flags: dict) -> None:
    """Call the observer; after its first failure, record it and stop calling it."""
    if "observer_error" in flags:
        return
    try:
        on_line(line)
    except Exception as exc:
        flags["observer_error"] = True
        flags.setdefault("reader_error", f"stdout observer failed: {type(exc).__name__}: {exc}")


def _kill_group(proc: subprocess.Popen) -> None:
    for sig, grace in ((signal.SIGTERM, TERMINATE_GRACE_S), (signal.SIGKILL, TERMINATE_GRACE_S)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=grace)
            return
        except subprocess.TimeoutExpired:
            continue


def run_process(
    argv: Sequence[str],
    *,
    timeout_s: float,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    stdin: bytes | Path | None = None,
    max_stdout_bytes: int = 8 * 1024 * 1024,
    cancel: threading.Event | None = None,
    on_stdout_line: Callable[[bytes], None] | None = None,
) -> ProcessResult:
    """Run ``argv`` to completion, timeout or cancellation; never raises for the child.

    ``env`` replaces the environment entirely when given (callers build
    allowlists; ``os.environ`` is never inherited implicitly by sandboxed
    children). The child gets its own session so a timeout kills its whole
    process tree, not just the direct child. ``stdin`` as a ``Path`` is a file
    the child reads directly (large inputs never held in memory).
    """
    argv = tuple(str(a) for a in argv)
    started = time.monotonic()
    if cancel is not None and cancel.is_set():
        return ProcessResult(argv, "cancelled", None, b"", False, "", 0.0, "cancelled before start")
    try:
        with contextlib.ExitStack() as files:
            stdin_file = files.enter_context(open(stdin, "rb")) if isinstance(stdin, Path) else None
            proc = subprocess.Popen(
                argv,
                cwd=cwd,
                env=dict(env) if env is not None else None,
                stdin=stdin_file or (subprocess.PIPE if stdin is not None else subprocess.DEVNULL),
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
            )
    except OSError as exc:
        return ProcessResult(argv, "spawn-failure", None, b"", False, "", 0.0, f"{type(exc).__name__}: {exc}")
    out, err = bytearray(), bytearray()
    flags: dict[str, Any] = {"overflow": False}
    err_flags: dict[str, Any] = {}
    readers = [
        threading.Thread(
            target=_drain,
            args=(proc.stdout, out),
            kwargs={"cap": max_stdout_bytes, "keep_tail": False, "flags": flags, "on_line": on_stdout_line},
            daemon=True,
        ),
        threading.Thread(
            target=_drain,
            args=(proc.stderr, err),
            kwargs={"cap": STDERR_TAIL_BYTES, "keep_tail": True, "flags": err_flags, "on_line": None},
            daemon=True,
        ),
    ]
    for reader in readers:
        reader.start()
    if isinstance(stdin, bytes):
        threading.Thread(target=_feed, args=(proc, stdin), daemon=True).start()
    state = wait_exit(proc, deadline=started + timeout_s, cancel=cancel)
    if state != "exited":
        _kill_group(proc)
    else:
        # The leader exited; make sure no orphan it left in its group survives it.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    for reader in readers:
        reader.join(timeout=5)
    if any(reader.is_alive() for reader in readers):
        # A grandchild still holds the pipe open; what was captured is not the whole output.
        flags.setdefault("reader_error", "an output pipe was still open 5 s after the process ended")
    reader_error = flags.get("reader_error") or err_flags.get("reader_error", "")
    detail = {"timeout": f"exceeded {timeout_s:.0f} s", "cancelled": "sweep cancelled"}.get(state, "")
    return ProcessResult(
        argv=argv,
        state=state,
        returncode=proc.returncode if state == "exited" else None,
        stdout=bytes(out),
        stdout_overflow=flags["overflow"],
        stderr_tail=err.decode("utf-8", "replace"),
        duration_s=time.monotonic() - started,
        detail=detail,
        reader_error=reader_error,
    )


def wait_exit(
    proc: subprocess.Popen[bytes], *, deadline: float, cancel: threading.Event | None
) -> ProcessState:
    """Block until ``proc`` exits (``"exited"``), ``deadline`` (monotonic) passes (``"timeout"``) or
    ``cancel`` is set (``"cancelled"``), whichever comes first; never kills.

    No polling sleep: the wait blocks on a pidfd, which becomes readable the moment the child
    exits; with ``cancel`` it wakes every ``CANCEL_CHECK_S`` to look at the event. Without pidfd
    support (Linux < 5.3) it falls back to ``Popen.wait`` slices.
    """
    try:
        pidfd: int | None = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):
        pidfd = None
    try:
        poller = None
        if pidfd is not None:
            poller = select.poll()
            poller.register(pidfd, select.POLLIN)
        while proc.poll() is None:
            if cancel is not None and cancel.is_set():
                return "cancelled"
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return "timeout"
            slice_s = remaining if cancel is None else min(remaining, CANCEL_CHECK_S)
            if poller is not None:
                poller.poll(max(1, math.ceil(slice_s * 1000)))
            else:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=slice_s)
        return "exited"
    finally:
        if pidfd is not None:
            os.close(pidfd)


def _feed(proc: subprocess.Popen[bytes], data: bytes) -> None:
    if proc.stdin is None:  # never: spawned with stdin=PIPE when there is data to feed
        return
    try:
        proc.stdin.write(data)
        proc.stdin.close()
    except (BrokenPipeError, OSError):
        # The child closed stdin early (or died); its result says why.
        pass


class ManagedProcess:
    """A long-lived child (a server, not a command) leading its own process group.

    Built only by ``spawn_group``. Unlike ``run_process`` nothing waits for it: the owner polls
    it, and ``stop`` tears its whole group down (SIGTERM, then SIGKILL after the grace).
    """

    def __init__(self, proc: subprocess.Popen) -> None:
        self._proc = proc

    @property
    def pid(self) -> int:
        return self._proc.pid

    def poll(self) -> int | None:
        """The exit code once the leader has exited, else ``None``."""
        return self._proc.poll()

    def wait(self, timeout_s: float) -> int | None:
        """Wait up to ``timeout_s`` for the leader to exit; its exit code, or ``None`` if still running."""
        try:
            return self._proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            return None

    def close_stdin(self) -> None:
        """Close our end of the child's stdin pipe (a supervisor reads that as "owner gone")."""
        if self._proc.stdin is not None and not self._proc.stdin.closed:
            with contextlib.suppress(OSError):
                self._proc.stdin.close()

    def stop(self) -> int | None:
        """Kill the whole group (SIGTERM, grace, SIGKILL) and reap the leader. Idempotent."""
        self.close_stdin()
        if self._proc.poll() is None:
            _kill_group(self._proc)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self._proc.pid, signal.SIGKILL)  # stragglers the leader left in its group
        return self.wait(TERMINATE_GRACE_S)


def spawn_group(
    argv: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    stdin_pipe: bool = False,
    log_path: Path | None = None,
) -> ManagedProcess:
    """Start ``argv`` as the leader of a new process group and return without waiting.

    ``stdin_pipe`` keeps a pipe to its stdin open for the owner's lifetime (EOF when the owner
    dies, even by SIGKILL); otherwise stdin is /dev/null. Output goes to ``log_path`` (opened
    for append, 0600: a server's log may quote request data) or is inherited. Raises ``OSError``
    when the program cannot be started: unlike ``run_process``, a server that never started has
    no result to record, so the caller turns this into its own preflight error.
    """
    log = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600) if log_path is not None else None
    try:
        proc = subprocess.Popen(
            [str(a) for a in argv],
            cwd=cwd,
            env=dict(env) if env is not None else None,
            stdin=subprocess.PIPE if stdin_pipe else subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,
        )
    finally:
        if log is not None:
            os.close(log)
    return ManagedProcess(proc)


class ProcessError(RuntimeError):
    """A harness-owned step (git, setup, verify) did not complete normally."""

    def __init__(self, what: str, result: ProcessResult) -> None:
        super().__init__(f"{what}: {result.describe()}")
        self.result = result


def run_checked(argv: Sequence[str], *, what: str, timeout_s: float = 120, **kwargs) -> ProcessResult:
    """``run_process`` for trusted helper commands that must succeed."""
    result = run_process(argv, timeout_s=timeout_s, **kwargs)
    if not result.ok:
        raise ProcessError(what, result)
    return result
