"""The result-line channel for the kit's Python adapters (unittest shim, pytest, review check).

``open_channel()`` opens the judge runner's FIFO by its path (``WORKFLOW_BENCH_RESULT_PIPE``),
which reaches the runner through any wrapper (``make``, ``sh -c``, ``tox``) that closed fd 9,
and **claims** it before the adapter imports any test module or workspace code: the runner's
decoy FIFO (``<path>.decoy``, group-writable) is renamed onto the path and put on fd 9 in place
of the inherited write end. Code loaded afterwards that writes result lines to the documented
channel, by path or by fd 9, writes into the decoy, which the runner reads and reports
(``decoy_bytes``: the run is ``evidence-tampered``); forging needs this adapter's own
descriptor. One adapter per command therefore reports; a second finds the decoy (its mode says
so) and stops without writing. Without a decoy (an older runner) the path is unlinked and fd 9
closed instead.
``emit`` writes one line per test (see judge_runner.py for the protocol). The adapters run
isolated (``-I``), so each puts its own directory first on ``sys.path`` just long enough to import
this module (the distinct name keeps it from ever standing in for a workspace module). Stdlib only.
"""

import json
import os
import stat

PIPE_VAR = "WORKFLOW_BENCH_RESULT_PIPE"
FD_VAR = "WORKFLOW_BENCH_RESULT_FD"
DECOY_SUFFIX = ".decoy"  # keep in sync with judge_runner.py and wfbench_result_channel.cjs
DECOY_MARK = stat.S_IWGRP  # the decoy's mode carries it; the channel's never does
MAX_MESSAGE_CHARS = 500


class NoChannel(RuntimeError):
    """Not started by the judge runner: there is no channel to report on."""


def open_channel():
    """A line-buffered text stream on the runner's FIFO. Raises ``NoChannel`` outside the runner."""
    path = os.environ.get(PIPE_VAR)
    if not path:
        raise NoChannel(
            f"{PIPE_VAR} is not set: this adapter reports to the workflow-bench judge runner, "
            "which runs verify and the hidden oracle (README, 'Outcome reports')"
        )
    # O_NONBLOCK for the open only: with the runner gone (no reader) it fails at once (ENXIO)
    # instead of hanging; writes then block, so a full pipe never drops a line.
    try:
        fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise NoChannel(
            f"{PIPE_VAR} names no channel: an earlier adapter of this run claimed it (one adapter "
            "reports per verify or oracle command; README, 'Sealed outcomes')"
        ) from None
    claim(fd, path)
    os.set_blocking(fd, True)
    return os.fdopen(fd, "w", buffering=1, encoding="utf-8", errors="replace")


def claim(fd: int, path: str) -> None:
    """Take the channel for this adapter alone: the decoy renamed onto its path and dup'ed onto
    an inherited fd 9 on it (without a decoy: the path unlinked, fd 9 closed)."""
    mine = os.fstat(fd)
    if not stat.S_ISFIFO(mine.st_mode):
        os.close(fd)
        raise NoChannel(f"{PIPE_VAR} is not the judge runner's pipe")
    if mine.st_mode & DECOY_MARK:
        os.close(fd)
        raise NoChannel(
            f"{PIPE_VAR} names no channel: an earlier adapter of this run claimed it (one adapter "
            "reports per verify or oracle command; README, 'Sealed outcomes')"
        )
    try:
        os.rename(path + DECOY_SUFFIX, path)
        decoy = os.open(path, os.O_WRONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        os.unlink(path)
        decoy = None
    try:
        inherited = os.environ.get(FD_VAR, "")
        if inherited.isdigit() and int(inherited) != fd:
            try:
                other = os.fstat(int(inherited))
            except OSError:
                return  # a wrapper closed it already
            if (other.st_dev, other.st_ino) == (mine.st_dev, mine.st_ino):
                if decoy is None:
                    os.close(int(inherited))
                else:
                    os.dup2(decoy, int(inherited), inheritable=True)
    finally:
        if decoy is not None:
            os.close(decoy)


def emit(channel, test_id: str, outcome: str, message: str | None = None) -> None:
    event = {"test": test_id, "outcome": outcome}
    if message and outcome != "passed":
        event["message"] = message[:MAX_MESSAGE_CHARS]
    channel.write(json.dumps(event) + "\n")
    channel.flush()


def tampered(channel, what: str) -> None:
    """The adapter found the test framework changed under it (``wfbench_framework_guard``)."""
    channel.write(json.dumps({"tampered": what[:MAX_MESSAGE_CHARS]}) + "\n")
    channel.flush()


def done(channel) -> None:
    channel.write(json.dumps({"done": True}) + "\n")
    channel.flush()
