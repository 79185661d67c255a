"""Harness-owned judge runner: runs a verify/oracle command and writes the outcome report.

Staged read-only into the sandbox and started as ``python3 -I -B judge_runner.py`` (isolated:
nothing from the workspace is importable here). Protocol:

1. stdin carries one JSON line ``{"nonce", "report", "command"}`` and is then closed: the nonce
   never appears in an environment, an argv or a file the test process can read;
2. this process makes itself non-dumpable first, so a same-uid test process cannot read its
   memory, environment or file descriptors through /proc or ptrace;
3. the command runs in a child (``/bin/sh -c``) with a result pipe on fd 9
   (``WORKFLOW_BENCH_RESULT_FD=9``); the test framework writes one JSON object per line:
   ``{"test": "<id>", "outcome": "passed"|"failed"|"error"|"skipped"}`` and, when the run
   finished normally, ``{"done": true}``;
4. after the child exits, and (with ``"reap": true``, only in a sandbox with its own PID
   namespace) after killing every other process the child left behind, so nothing of the code
   under test can still rewrite it, this process writes ``report`` (JSON: the nonce, the child's exit
   code, the counts, whether ``done`` was seen). The harness checks it from outside.

A test id reported with any outcome other than ``passed`` counts as not passed, so a late
forged "passed" line cannot undo a failure. Not imported by workflow_bench (stdlib only).
"""

import contextlib
import ctypes
import json
import os
import select
import signal
import subprocess
import sys

PR_SET_DUMPABLE = 4
RESULT_FD = 9
MAX_CHANNEL_BYTES = 8 * 1024 * 1024
MAX_TESTS = 100_000


def main() -> int:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
        print("judge runner: cannot make itself non-dumpable", file=sys.stderr)
        return 3
    request = json.loads(sys.stdin.buffer.readline(65536))
    sys.stdin.close()
    nonce, report, command = request["nonce"], request["report"], request["command"]
    reap = request.get("reap") is True
    read_end, write_end = os.pipe()
    if read_end == RESULT_FD:
        read_end, old = os.dup(read_end), read_end
        os.close(old)
    os.dup2(write_end, RESULT_FD)
    os.close(write_end)
    env = dict(os.environ, WORKFLOW_BENCH_RESULT_FD=str(RESULT_FD))
    # Runs inside the sandbox with the stdlib only: workflow_bench.process is not available here,
    # and the harness's own timeout kills this whole sandbox.
    child = subprocess.Popen(  # noqa: TID251
        ["/bin/sh", "-c", command], env=env, pass_fds=(RESULT_FD,), stdin=subprocess.DEVNULL
    )
    os.close(RESULT_FD)
    outcomes, done, malformed = _collect(read_end, child)
    if reap:
        # Everything the code under test started: kill(-1) spares only us and the namespace's init.
        with contextlib.suppress(ProcessLookupError):
            os.kill(-1, signal.SIGKILL)
    passed = sum(1 for seen in outcomes.values() if seen == {"passed"})
    result = {
        "nonce": nonce,
        "exit_code": child.returncode,
        "tests_run": len(outcomes),
        "tests_passed": passed,
        "tests_not_passed": len(outcomes) - passed,
        "done": done,
        "malformed_lines": malformed,
    }
    fd = os.open(report, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w") as handle:
        json.dump(result, handle)
        handle.flush()
        os.fsync(handle.fileno())
    return 0


def _collect(read_end: int, child) -> tuple[dict, bool, int]:
    """Read result lines until the child exits (then drain what is buffered, never waiting on
    grandchildren that kept the pipe open)."""
    outcomes: dict[str, str] = {}
    buffer, total, done, malformed = b"", 0, False, 0
    os.set_blocking(read_end, False)
    while True:
        exited = child.poll() is not None
        ready, _, _ = select.select([read_end], [], [], 0 if exited else 0.2)
        chunk = b""
        if ready:
            try:
                chunk = os.read(read_end, 65536)
            except BlockingIOError:
                chunk = b""
        if chunk and total < MAX_CHANNEL_BYTES:
            total += len(chunk)
            buffer += chunk
            *lines, buffer = buffer.split(b"\n")
            for line in lines:
                done, malformed = _take(line, outcomes, done, malformed)
        if exited and not chunk:
            break
    child.wait()
    os.close(read_end)
    return outcomes, done, malformed


def _take(line: bytes, outcomes: dict, done: bool, malformed: int) -> tuple[bool, int]:
    if not line.strip():
        return done, malformed
    try:
        event = json.loads(line)
    except ValueError:
        return done, malformed + 1
    if not isinstance(event, dict):
        return done, malformed + 1
    if event.get("done") is True:
        return True, malformed
    test, outcome = event.get("test"), event.get("outcome")
    if not isinstance(test, str) or outcome not in ("passed", "failed", "error", "skipped"):
        return done, malformed + 1
    if test in outcomes or len(outcomes) < MAX_TESTS:
        outcomes.setdefault(test, set()).add(outcome)
    return done, malformed


if __name__ == "__main__":
    sys.exit(main())
