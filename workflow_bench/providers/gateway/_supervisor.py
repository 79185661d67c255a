"""Ties the LiteLLM proxy to its runner: ``-m <this module> [--remove-dir D] ARGV``.

It starts ARGV as the leader of a new process group and then watches its own stdin, a pipe whose
only writer is the runner: when the runner exits for any reason, SIGKILL included, the kernel
closes that pipe, the read returns EOF and the supervisor tears the proxy's whole group down
(``ManagedProcess.stop``: SIGTERM, then SIGKILL after a grace). A proxy that exits on its own
ends the supervisor with the proxy's exit code. SIGINT is ignored (a terminal's Ctrl-C belongs
to the runner, which then closes the pipe); SIGTERM tears down like EOF. Output is inherited, so
the proxy logs to whatever the runner gave the supervisor (a 0600 file). With ``--remove-dir``
the supervisor deletes the gateway's private dir after tearing the proxy down for a departed
owner, so even a SIGKILLed runner leaves no config or logs behind. (A proxy that exits on its own
leaves the dir: the live runner reads the log tail for its error, then removes the dir itself.)
"""

from __future__ import annotations

import shutil
import signal
import sys
import threading

from workflow_bench.process import spawn_group

_POLL_S = 0.2


def main(argv: list[str]) -> int:
    remove_dir = None
    if argv[:1] == ["--remove-dir"] and len(argv) >= 2:
        remove_dir, argv = argv[1], argv[2:]
    if not argv:
        print(
            "usage: python -m workflow_bench.providers.gateway._supervisor"
            " [--remove-dir DIR] COMMAND [ARGS...]",
            file=sys.stderr,
        )
        return 2
    code, owner_gone = _supervise(argv)
    if owner_gone and remove_dir is not None:
        shutil.rmtree(remove_dir, ignore_errors=True)
    return code


def _supervise(argv: list[str]) -> tuple[int, bool]:
    """Run ``argv`` until it exits (its code, False) or the owner goes away (0, True)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    child = spawn_group(argv)

    def watch_stdin() -> None:
        while sys.stdin.buffer.read(4096):
            pass
        stop.set()

    threading.Thread(target=watch_stdin, name="owner-watch", daemon=True).start()
    while not stop.is_set():
        code = child.poll()
        if code is not None:
            return code, False
        stop.wait(_POLL_S)
    child.stop()
    return 0, True


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
