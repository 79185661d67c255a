"""Run a command as the child of a subreaper and report what it leaves behind.

``python subreaper.py LOG -- CMD...``: becomes a child subreaper
(PR_SET_CHILD_SUBREAPER), starts CMD with its output in LOG, prints
``PID <pid>``, forwards SIGINT/SIGTERM to it, and once it exits waits a moment,
then prints ``RC <code>`` and ``LEFT <json list of [pid, cmdline]>``: every
process that outlived CMD (orphans reparent to us, not to init, so none can
hide). Leftovers are killed after being reported. Only this process's own
descendants are ever looked at: other sweeps run on the same machine.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

PR_SET_CHILD_SUBREAPER = 36


def children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        if ppid == pid:
            found.append(int(entry.name))
    return found


def cmdline(pid: int) -> str:
    try:
        return (
            (Path("/proc") / str(pid) / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        )
    except OSError:
        return "?"


def main() -> int:
    log, _, *command = sys.argv[1:]
    if ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER)")
    with open(log, "wb") as out:
        child = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda signum, _frame: child.send_signal(signum))
    print(f"PID {child.pid}", flush=True)
    code = child.wait()
    time.sleep(1.0)  # let reparenting and the last exits settle
    left = []
    while pids := [p for p in children(os.getpid()) if not _reaped_zombie(p)]:
        left += [[p, cmdline(p)] for p in pids]
        for p in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(p, signal.SIGKILL)
        time.sleep(0.2)
    print(f"RC {code}", flush=True)
    print(f"LEFT {json.dumps(left)}", flush=True)
    return 0


def _reaped_zombie(pid: int) -> bool:
    """Reap ``pid`` if it already exited (a zombie is not a leftover process)."""
    try:
        waited, _ = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return True
    return waited == pid


if __name__ == "__main__":
    sys.exit(main())
