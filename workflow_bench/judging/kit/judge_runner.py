"""Harness-owned judge runner: runs a verify/oracle command and writes the outcome report.

Staged read-only into the sandbox and started as ``python3 -I -B judge_runner.py`` (isolated:
nothing from the workspace is importable here). Protocol:

1. stdin carries one JSON line ``{"nonce", "report", "command", "channel", "junit_dir",
   "deadline_s", "reap"}`` and is then closed: the nonce never appears in an environment, an
   argv or a file the test process can read;
2. this process makes itself non-dumpable first, so a same-uid test process cannot read its
   memory, environment or file descriptors through /proc or ptrace;
3. the command runs in a child (``/bin/sh -c``, its own process group) with two ways to report,
   both owned by this runner:

   - **result lines**: a FIFO at ``channel`` (``WORKFLOW_BENCH_RESULT_PIPE``), also open on fd 9
   (``WORKFLOW_BENCH_RESULT_FD=9``). A wrapper that re-spawns with only fds 0-2 (``npx``,
   ``npm test``) loses fd 9, so adapters open the path, which survives any wrapper. One JSON
   object per line: ``{"test": "<id>", "outcome": "passed"|"failed"|"error"|"skipped",
   "message"?: "<why>"}`` and, when the run finished normally, ``{"done": true}``; an adapter
   that found the test framework changed under it says ``{"tampered": "<what>"}`` (the report
   lists them, the harness judges the run tampered). Lines are read as they arrive, so a run
   that times out still reports what ran;
   - **JUnit XML**: ``junit_dir`` (``WORKFLOW_BENCH_JUNIT_DIR``; ``WORKFLOW_BENCH_JUNIT`` names
   ``junit.xml`` in it), empty when the run starts (checked here) and written by the framework.

4. after the child exits (or ``deadline_s`` passes: its process group is killed and the report
   says ``timed_out``), and with ``"reap": true`` (only in a sandbox with its own PID namespace)
   after killing every other process the child left behind, so nothing of the code under test
   can still write, this process attests every ``*.xml`` file in ``junit_dir`` (name, size,
   sha256; read without following links, bounded) and writes ``report`` (JSON: the nonce, the
   child's exit code, each test's outcome, whether ``done`` was seen, the attestations). The
   harness checks it from outside and parses only the XML bytes whose digest this report names.

Every node process of the command preloads the kit's JavaScript framework guard
(``NODE_OPTIONS=--require wfbench_framework_guard.cjs``, before whatever the environment already
had), which reports on a FIFO of its own (``<channel>.guard``, ``WORKFLOW_BENCH_GUARD_PIPE``): each
line there is a ``tampered`` finding.

A test id reported with several outcomes keeps the worst (failed/error over skipped over passed),
so a late forged "passed" line cannot undo a failure. Beside the channel this process makes a
**decoy** FIFO (``<channel>.decoy``, group-writable: the mark adapters check) and reads it too:
the kit's adapters rename it onto the channel's path and put it on fd 9 when they claim the
channel, before any test code loads, so whatever reaches it afterwards was written by code under
test impersonating a reporter. The report counts those bytes (``decoy_bytes``; the harness
judges the run tampered). Not imported by workflow_bench (stdlib only).
"""

import contextlib
import ctypes
import hashlib
import json
import os
import select
import signal
import stat
import subprocess
import sys
import time
from typing import Any

PR_SET_DUMPABLE = 4
RESULT_FD = 9
DECOY_SUFFIX = ".decoy"  # keep in sync with wfbench_result_channel.py/.cjs
DECOY_MODE = 0o620  # group-writable: how an adapter tells the decoy from the channel
# The JavaScript framework guard (wfbench_framework_guard.cjs), preloaded into every node process
# of the command through NODE_OPTIONS, reports on its own FIFO beside the channel.
GUARD_SUFFIX = ".guard"
JS_GUARD = "wfbench_framework_guard.cjs"
MAX_GUARD_BYTES = 256 * 1024
MAX_CHANNEL_BYTES = 8 * 1024 * 1024
MAX_TESTS = 100_000
# After the child exits, what is already in the pipe is read; a grandchild still writing is not
# waited for longer than this (it is killed right after, with everything else).
DRAIN_S = 1.0
MAX_ID_CHARS = 1000  # keep in sync with judging/verdict.py
MAX_MESSAGE_CHARS = 1000
MAX_TAMPERED = 20  # ``tampered`` lines kept (each cut to MAX_MESSAGE_CHARS)
# JUnit reports: a 10 000-test pytest run writes about 2 MB; 16 files cover one report per
# framework of a multi-step verify. Keep in sync with judging/outcome_report.py (MAX_JUNIT_FILE_BYTES;
# tests/unit/test_no_drift.py checks).
MAX_JUNIT_FILES = 16
MAX_JUNIT_FILE_BYTES = 16 * 1024 * 1024
MAX_JUNIT_TOTAL_BYTES = 32 * 1024 * 1024
JUNIT_FILE = "junit.xml"
_RANK = {"passed": 0, "skipped": 1, "failed": 2, "error": 2}  # keep in sync with judging/verdict.py


def main() -> int:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
        print("judge runner: cannot make itself non-dumpable", file=sys.stderr)
        return 3
    request = json.loads(sys.stdin.buffer.readline(65536))
    sys.stdin.close()
    nonce, report, command = request["nonce"], request["report"], request["command"]
    channel, junit_dir = request["channel"], request["junit_dir"]
    reap = request.get("reap") is True
    planted = _entries(junit_dir)
    read_end, child_end, keeper = _open_channel(channel)
    decoy_read, decoy_keeper = _open_decoy(channel + DECOY_SUFFIX)
    guard_read, guard_keeper = _open_guard(channel + GUARD_SUFFIX)
    env = dict(
        os.environ,
        NODE_OPTIONS=_node_options(os.environ.get("NODE_OPTIONS", "")),
        WORKFLOW_BENCH_GUARD_PIPE=channel + GUARD_SUFFIX,
        WORKFLOW_BENCH_RESULT_FD=str(RESULT_FD),
        WORKFLOW_BENCH_RESULT_PIPE=channel,
        WORKFLOW_BENCH_JUNIT=os.path.join(junit_dir, JUNIT_FILE),
        WORKFLOW_BENCH_JUNIT_DIR=junit_dir,
    )
    # Runs inside the sandbox with the stdlib only: workflow_bench.process is not available here,
    # and the harness's own timeout (deadline_s plus a grace) kills this whole sandbox.
    child = subprocess.Popen(  # noqa: TID251
        ["/bin/sh", "-c", command],
        env=env,
        pass_fds=(RESULT_FD,),
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )
    os.close(child_end)
    guard = _Guard(guard_read)
    tests, state = _collect(
        read_end,
        child,
        deadline=time.monotonic() + float(request["deadline_s"]),
        decoy=decoy_read,
        guard=guard,
    )
    if reap:
        # Everything the code under test started: kill(-1) spares only us and the namespace's init.
        with contextlib.suppress(ProcessLookupError):
            os.kill(-1, signal.SIGKILL)
    os.close(keeper)
    os.close(decoy_keeper)
    os.close(guard_keeper)
    state["decoy_bytes"] += _drain(decoy_read)  # written before the reap
    os.close(decoy_read)
    guard.read(state)
    os.close(guard_read)
    junit, refused = _attest(junit_dir)
    if planted:
        refused = f"the JUnit directory already held {planted[0]!r} when the run started"
    result = {
        "nonce": nonce,
        "exit_code": child.returncode,
        "tests": tests,
        "junit": junit,
        "junit_refused": refused,
        **state,
    }
    fd = os.open(report, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w") as handle:
        json.dump(result, handle)
        handle.flush()
        os.fsync(handle.fileno())
    return 0


def _open_channel(path: str) -> tuple[int, int, int]:
    """(read end, the child's fd 9, a keeper) of one FIFO at ``path``: fd 9 and the path are the
    same pipe. The keeper write end stays open here so the FIFO never reads as end-of-file while
    no child holds it (a reader would otherwise spin), and is closed after the run."""
    os.mkfifo(path, 0o600)
    read_end = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    keeper = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
    writer = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
    os.set_blocking(writer, True)  # a full pipe makes the test process wait, never drop a line
    for fd in (read_end, keeper):
        os.set_inheritable(fd, False)
    if read_end == RESULT_FD or keeper == RESULT_FD:
        raise RuntimeError("fd 9 was free before the channel opened")  # 0-2 are open: cannot happen
    os.dup2(writer, RESULT_FD)
    os.close(writer)
    return read_end, RESULT_FD, keeper


def _open_decoy(path: str) -> tuple[int, int]:
    """(read end, a keeper write end) of the decoy FIFO at ``path``, marked by its mode."""
    os.mkfifo(path, 0o600)
    os.chmod(path, DECOY_MODE)  # mkfifo's mode is masked by the umask
    read_end = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    keeper = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
    return read_end, keeper


def _open_guard(path: str) -> tuple[int, int]:
    """(read end, a keeper write end) of the framework guard's FIFO at ``path``."""
    os.mkfifo(path, 0o600)
    read_end = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    keeper = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
    for fd in (read_end, keeper):
        os.set_inheritable(fd, False)
    return read_end, keeper


def _node_options(existing: str) -> str:
    """``NODE_OPTIONS`` with the kit's framework guard preloaded first (before ``existing``)."""
    guard = os.path.join(os.path.dirname(os.path.abspath(__file__)), JS_GUARD)
    quoted = '"' + guard.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return f"--require {quoted} {existing}".strip()


class _Guard:
    """The framework guard's lines (``{"tampered": "<what>"}``), read from its FIFO as they come.

    Only the kit's guard writes there, and writing there can only make a run tampered, never
    prove it: every line counts, one that is not a finding is one too."""

    def __init__(self, fd: int) -> None:
        self.fd, self.buffer, self.total = fd, b"", 0

    def read(self, state: dict) -> None:
        while True:
            try:
                chunk = os.read(self.fd, 65536)
            except BlockingIOError:
                break
            if not chunk:
                break
            if self.total < MAX_GUARD_BYTES:
                self.buffer += chunk[: MAX_GUARD_BYTES - self.total]
            self.total += len(chunk)
        *lines, self.buffer = self.buffer.split(b"\n")
        for line in lines:
            if line.strip() and len(state["tampered"]) < MAX_TAMPERED:
                state["tampered"].append(_finding(line))


def _finding(line: bytes) -> str:
    try:
        event = json.loads(line)
    except ValueError:
        event = None
    if isinstance(event, dict) and isinstance(event.get("tampered"), str) and event["tampered"]:
        return event["tampered"][:MAX_MESSAGE_CHARS]
    return "a line on the framework guard's pipe that is not a finding"


def _drain(fd: int) -> int:
    """How many bytes are waiting on ``fd`` (read and discarded, never blocking)."""
    total = 0
    while True:
        try:
            chunk = os.read(fd, 65536)
        except BlockingIOError:
            return total
        if not chunk:
            return total
        total += len(chunk)


def _collect(read_end: int, child, *, deadline: float, decoy: int, guard: _Guard) -> tuple[dict, dict]:
    """Read result lines until the child exits (then drain what is buffered, never waiting on
    grandchildren that kept the pipe open) or the deadline passes (then kill its process group);
    count what reaches the ``decoy`` meanwhile."""
    buffer, total = b"", 0
    tests: dict[str, Any] = {}
    drain_until: float | None = None
    state: dict[str, Any] = {
        "done": False,
        "malformed_lines": 0,
        "channel_overflow": False,
        "timed_out": False,
        "decoy_bytes": 0,
        "tampered": [],
    }
    # The child's exit wakes the wait at once (its pidfd turns readable); without one, every exit
    # was noticed only at the next 0.2 s timeout, ~0.1 s per judged run on average (issue 26).
    try:
        exit_fd = [os.pidfd_open(child.pid)]
    except (AttributeError, OSError):
        exit_fd = []
    while True:
        exited = child.poll() is not None
        if not exited and time.monotonic() > deadline:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(child.pid, signal.SIGKILL)
            child.wait()
            state["timed_out"], exited = True, True
        if exited and drain_until is None:
            drain_until = time.monotonic() + DRAIN_S
        wait_s = 0 if exited else max(0.0, min(0.2, deadline - time.monotonic()))
        watched = [read_end, decoy, guard.fd, *([] if exited else exit_fd)]
        ready, _, _ = select.select(watched, [], [], wait_s)
        if decoy in ready:
            state["decoy_bytes"] += _drain(decoy)
        if guard.fd in ready:
            guard.read(state)
        ready = [fd for fd in ready if fd == read_end]
        chunk = b""
        if ready:
            try:
                chunk = os.read(read_end, 65536)
            except BlockingIOError:
                chunk = b""
        if chunk:
            if total + len(chunk) > MAX_CHANNEL_BYTES:
                state["channel_overflow"] = True
                chunk = chunk[: max(0, MAX_CHANNEL_BYTES - total)]
            total += len(chunk)
            buffer += chunk
            *lines, buffer = buffer.split(b"\n")
            for line in lines:
                _take(line, tests, state)
        if exited and (not ready or (drain_until is not None and time.monotonic() > drain_until)):
            break
    child.wait()
    os.close(read_end)
    for fd in exit_fd:
        os.close(fd)
    return tests, state


def _take(line: bytes, tests: dict, state: dict) -> None:
    if not line.strip():
        return
    try:
        event = json.loads(line)
    except ValueError:
        state["malformed_lines"] += 1
        return
    if not isinstance(event, dict):
        state["malformed_lines"] += 1
        return
    if event.get("done") is True:
        state["done"] = True
        return
    if isinstance(event.get("tampered"), str):
        if len(state["tampered"]) < MAX_TAMPERED:
            state["tampered"].append(event["tampered"][:MAX_MESSAGE_CHARS])
        return
    test, outcome, message = event.get("test"), event.get("outcome"), event.get("message")
    if not isinstance(test, str) or not test.strip() or outcome not in _RANK:
        state["malformed_lines"] += 1
        return
    test = test[:MAX_ID_CHARS]
    message = message[:MAX_MESSAGE_CHARS] if isinstance(message, str) and outcome != "passed" else None
    seen = tests.get(test)
    if seen is None:
        if len(tests) < MAX_TESTS:
            tests[test] = [outcome, message]
    elif _RANK[outcome] > _RANK[seen[0]]:
        tests[test] = [outcome, message or seen[1]]


def _entries(directory: str) -> list[str]:
    try:
        return sorted(os.listdir(directory))
    except OSError:
        return []


def _attest(directory: str) -> tuple[list, str | None]:
    """[{name, size, sha256}] of every ``*.xml`` entry of ``directory``, or why they are refused."""
    names = [name for name in _entries(directory) if name.endswith(".xml")]
    if len(names) > MAX_JUNIT_FILES:
        return [], f"{len(names)} JUnit files were written; the limit is {MAX_JUNIT_FILES}"
    attested, total = [], 0
    for name in names:
        path = os.path.join(directory, name)
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError as err:
            is_link = os.path.islink(path)
            return [], f"{name} is a symbolic link" if is_link else f"{name} cannot be opened: {err.strerror}"
        with os.fdopen(fd, "rb") as handle:
            info = os.fstat(handle.fileno())
            if not stat.S_ISREG(info.st_mode):
                return [], f"{name} is not a regular file"
            if info.st_size > MAX_JUNIT_FILE_BYTES:
                return [], f"{name} is {info.st_size} bytes; the limit is {MAX_JUNIT_FILE_BYTES}"
            total += info.st_size
            if total > MAX_JUNIT_TOTAL_BYTES:
                return [], f"the JUnit files exceed {MAX_JUNIT_TOTAL_BYTES} bytes together"
            digest, size = hashlib.sha256(), 0
            while chunk := handle.read(1 << 20):
                digest.update(chunk)
                size += len(chunk)
                if size > MAX_JUNIT_FILE_BYTES:
                    return [], f"{name} grew past {MAX_JUNIT_FILE_BYTES} bytes while it was read"
        attested.append({"name": name, "size": size, "sha256": digest.hexdigest()})
    return attested, None


if __name__ == "__main__":
    sys.exit(main())
