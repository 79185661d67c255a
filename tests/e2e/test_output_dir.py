"""The output directory under faults: one sweep at a time, disk full, early signals, SIGKILL.

Runners under test run as subprocesses (so they can be signalled or raced) with a private
TMPDIR each; nothing globs the shared /tmp.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from tests.builders import missing_tool, result_dicts
from tests.conftest import needs_root
from workflow_bench import runner
from workflow_bench.output.lock import LOCK_FILE
from workflow_bench.workspace.paths import WORK_ROOT_PATTERN

from .conftest import REPO_ROOT

pytestmark = pytest.mark.e2e
TRIVIAL = "trivial-amount-grouping"


def _start(argv: list[str], tmpdir: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "workflow_bench.runner", "--provider", "scripted", *argv],
        cwd=REPO_ROOT,
        env={**os.environ, "TMPDIR": str(tmpdir)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _wait_for(predicate, *, timeout_s: float, proc: subprocess.Popen) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if proc.poll() is not None:
            out, err = proc.communicate()
            pytest.fail(f"runner exited {proc.returncode} early:\n{out}\n{err}")
        if time.monotonic() > deadline:
            proc.kill()
            pytest.fail("timed out waiting for the runner")
        time.sleep(0.05)


def _rows(out: Path) -> list[dict]:
    return result_dicts(out)


def test_second_runner_on_the_same_out_exits_2_naming_the_first(
    task_file_for, tmp_path, make_short_dir, bwrap_bin, claude_bin, capsys, private_tmpdir
):
    tasks = task_file_for(TRIVIAL)
    out = tmp_path / "out"
    first_tmp = make_short_dir()  # short: the cells' socket paths must fit
    first = _start(["--tasks", str(tasks), "--arms", "baseline", "--out", str(out)], first_tmp)
    lock = out / LOCK_FILE
    _wait_for(lambda: lock.exists() and lock.read_text().strip(), timeout_s=120, proc=first)
    code = runner.main(
        ["--tasks", str(tasks), "--provider", "scripted", "--arms", "workflow", "--out", str(out)]
    )
    err = capsys.readouterr().err
    assert code == 2 and f"in use by runner pid {first.pid}" in err, err
    _, stderr = first.communicate(timeout=300)
    assert first.returncode == 0, stderr
    assert [r["arm"] for r in _rows(out)] == ["baseline"], "only the first sweep's rows"
    assert not any(private_tmpdir.iterdir())


def test_disk_full_keeps_written_rows_and_exits_1(
    task_file_for, tmp_path, make_short_dir, bwrap_bin, claude_bin
):
    needs_root("to mount a small tmpfs")
    fs = tmp_path / "fs"
    fs.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(fs)], capture_output=True)
    if mounted.returncode != 0:
        missing_tool(f"a tmpfs mount ({mounted.stderr.decode().strip()})")
    try:
        out = fs / "out"
        private = make_short_dir()
        proc = _start(
            [
                "--tasks",
                str(task_file_for(TRIVIAL)),
                "--arms",
                "baseline",
                "workflow_direct",
                "--out",
                str(out),
            ],
            private,
        )
        results = out / "results.jsonl"
        _wait_for(lambda: results.exists() and results.read_text().count("\n") >= 1, timeout_s=300, proc=proc)
        with open(fs / "filler", "wb") as filler:  # fill the disk before the second cell's row
            try:
                while True:
                    filler.write(b"\0" * 65536)
                    filler.flush()
            except OSError:
                pass  # ENOSPC: the disk is full now, which is the point
        stdout, stderr = proc.communicate(timeout=300)
        assert proc.returncode == 1, (stdout, stderr)
        assert "Traceback" not in stderr and "Traceback" not in stdout, stderr
        assert "No space left on device" in stderr and "rows were written" in stderr, (stdout, stderr)
        rows = _rows(out)
        assert [r["arm"] for r in rows] == ["baseline"], "the row written before the fault is kept whole"
        assert not any(p.name.startswith("workflow_direct") for p in out.rglob("*")), "no partial artifact"
        assert not any(private.iterdir()), "the cell directories are removed"
    finally:
        subprocess.run(["umount", "-l", str(fs)], check=False)


def test_sigterm_before_the_sweep_starts_exits_130_and_leaves_nothing(
    task_file_for, tmp_path, short_tmpdir, bwrap_bin, claude_bin, litellm_bin
):
    out = tmp_path / "out"
    private = short_tmpdir
    # --via-gateway: the LiteLLM proxy takes seconds to start after --out is claimed and
    # before any cell runs, a window wide enough to signal into deterministically.
    proc = _start(["--tasks", str(task_file_for(TRIVIAL)), "--via-gateway", "--out", str(out)], private)
    _wait_for(lambda: (out / LOCK_FILE).exists(), timeout_s=120, proc=proc)
    proc.send_signal(signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, (stdout, stderr)
    assert "Traceback" not in stderr, stderr
    assert "writing to" not in stdout, "the signal must have arrived before the sweep started"
    assert not out.exists(), "nothing left behind"
    assert not any(private.iterdir()), list(private.iterdir())


def test_sigkill_mid_sweep_then_a_new_run_collects_the_stale_cell_dir(
    task_file_for, tmp_path, short_tmpdir, bwrap_bin, claude_bin, monkeypatch
):
    private = short_tmpdir
    tasks = task_file_for(TRIVIAL)
    killed = _start(["--tasks", str(tasks), "--arms", "baseline", "--out", str(tmp_path / "out1")], private)

    def cell_dir_exists() -> bool:
        return any(
            WORK_ROOT_PATTERN.fullmatch(root.name) and any(len(c.name) == 8 for c in root.iterdir())
            for root in private.iterdir()
        )

    _wait_for(cell_dir_exists, timeout_s=120, proc=killed)
    killed.kill()
    killed.communicate()
    stale = [p for p in private.iterdir() if WORK_ROOT_PATTERN.fullmatch(p.name)]
    assert stale and all(p.name.startswith(f"wfb-{killed.pid}-") for p in stale)
    monkeypatch.setattr(tempfile, "tempdir", str(private))
    out = tmp_path / "out2"
    code = runner.main(
        ["--tasks", str(tasks), "--provider", "scripted", "--arms", "baseline", "--out", str(out)]
    )
    assert code == 0
    assert not any(private.iterdir()), f"stale cell directories left: {list(private.iterdir())}"
