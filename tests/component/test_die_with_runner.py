"""A sandboxed process dies with the runner, even when the runner dies as it starts.

``die_with_runner`` (sandbox/_bwrap.py) wraps every sandbox's argv. Real processes: a stand-in
runner (a Python process) starts the wrapped command, then is SIGKILLed; the command must be gone.
The negative controls: the bare command survives the same kill, and a runner that is already gone
when the wrapper checks (the race bwrap's own ``--die-with-parent`` leaves open) never execs it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from workflow_bench.sandbox._bwrap import die_with_runner

# The stand-in runner: starts argv (wrapped for itself when argv[1] is "wrap"), prints the
# child's pid, waits.
_RUNNER = """
import subprocess, sys, time
from workflow_bench.sandbox._bwrap import die_with_runner
argv = die_with_runner(sys.argv[2:]) if sys.argv[1] == "wrap" else sys.argv[2:]
child = subprocess.Popen(argv, start_new_session=True)
print(child.pid, flush=True)
time.sleep(600)
"""


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"


def _gone_within(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not _alive(pid):
            return True
        time.sleep(0.02)
    return False


def _start_and_kill_runner(argv: list[str], ready: Path, *, wrap: bool) -> int:
    command = [sys.executable, "-c", _RUNNER, "wrap" if wrap else "bare", *argv]
    runner = subprocess.Popen(command, stdout=subprocess.PIPE)
    assert runner.stdout is not None
    child = int(runner.stdout.readline())
    deadline = time.monotonic() + 30
    while not ready.exists():  # the command itself runs (past both execs), then the runner dies
        assert time.monotonic() < deadline, "the command never started"
        time.sleep(0.01)
    runner.send_signal(signal.SIGKILL)
    runner.wait()
    return child


def _sleeper(ready: Path) -> list[str]:
    return ["/bin/sh", "-c", 'touch "$0"; exec sleep 60', str(ready)]


def test_wrapped_command_dies_with_a_sigkilled_runner(tmp_path):
    ready = tmp_path / "ready"
    child = _start_and_kill_runner(_sleeper(ready), ready, wrap=True)
    try:
        assert _gone_within(child, 5), "the wrapped command outlived its SIGKILLed runner"
    finally:
        if _alive(child):
            os.kill(child, signal.SIGKILL)


def test_negative_control_bare_command_outlives_the_runner(tmp_path):
    ready = tmp_path / "ready"
    child = _start_and_kill_runner(_sleeper(ready), ready, wrap=False)
    try:
        assert not _gone_within(child, 1), "without the wrapper the command should outlive the runner"
    finally:
        os.kill(child, signal.SIGKILL)


@pytest.mark.parametrize("expected_parent", ["1", "999999999"])
def test_runner_gone_before_the_signal_was_armed_never_execs(tmp_path, expected_parent):
    """The wrapper's parent is not the runner it was built for: it exits 125 and runs nothing."""
    marker = tmp_path / "ran"
    argv = die_with_runner(["/bin/sh", "-c", 'touch "$0"', str(marker)])
    assert argv[argv.index("-c") + 2] == str(os.getpid())
    argv[argv.index("-c") + 2] = expected_parent  # as if it had been reparented
    result = subprocess.run(argv, timeout=30)
    assert result.returncode == 125
    assert not marker.exists()


def test_wrapper_passes_the_command_through_unchanged(tmp_path):
    out = tmp_path / "argv"
    script = 'printf "%s\\n" "$@" > "$0"'
    args = ["a b", "", "-c", "$HOME", "--"]
    result = subprocess.run(die_with_runner(["/bin/sh", "-c", script, str(out), *args]), timeout=30)
    assert result.returncode == 0
    assert out.read_text().split("\n")[:-1] == args
