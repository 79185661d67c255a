"""An agent that fills its disk bound costs the host at most that bound plus a fixed overhead (issue 30).

The real runner runs as a subprocess (real CLI, real bwrap, scripted model) with a private TMPDIR
and ``--cell-disk-mib``; the agent writes one file as large as its whole bound, then tries two
more (refused: the cell's volume is full). While it runs, a sampler in this process records every
100 ms (a) the bytes allocated under the private TMPDIR (the runner's whole work root: the cell's
volume image, the patch views, the templates; each inode once, never crossing into a mount), (b)
the TMPDIR filesystem's free space (``statvfs``; other processes on this machine move it too, so
it is reported, never asserted), and (c) the runner's ``VmHWM`` (its peak RSS, monotonic).

Before the fix, the patch view imported the file whole: it was read into the runner's memory
(twice: ``data + b"\\n"``), spooled into an import stream and stored as a blob beside the cell,
so host disk grew by ~3× the bound and the runner's RSS by ~2× it. Now a file over the view's
per-file cap is recorded by size and sha256 (from the snapshot's streamed digest, never read
again), and each import of a cell's view takes at most ``MAX_VIEW_IMPORT_BYTES`` of content.

Measured (2 cores, loaded by 7 other helpers), work root growth / runner peak RSS: before the
fix, 1024 MiB bound 4,122 / 2,189 MiB, 256 MiB bound 1,040 / 652 MiB; after, 1024 MiB 1,048 / 141,
256 MiB one file 275-281 / 133-142, 256 MiB of 4 MiB files 297-305 / 133-139 (with the import
budget lifted by hand: 1,048, failed). Run at another bound with ``WFBENCH_TEST_BOUND_MIB``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from tests.conftest import needs_root

from .conftest import REPO_ROOT

pytestmark = pytest.mark.e2e
MIB = 1024 * 1024
BOUND_MIB = int(os.environ.get("WFBENCH_TEST_BOUND_MIB", "256"))
# Above the bound: the volume's ext4 slack (5 % + 8 MiB, ``sandbox._volume``), then a fixed
# overhead: the cell's view (at most MAX_VIEW_IMPORT_BYTES = 32 MiB of content, spooled once and
# stored once), the overlay's metadata, the CLI's transcripts. Measured: see the module docstring.
# Beside it, once per sweep whatever its cells, the execute-only copy of the CLI binary
# (``sandbox._bwrap.exec_only_copy``, the binary's size: ~384 MiB for 2.1.332): not the agent's.
HOST_OVERHEAD_MIB = 96
# The runner's peak RSS, whatever the file sizes: measured ~100 MiB at every bound.
RUNNER_RSS_MIB = 300
TIMEOUT_S = 600


@dataclass
class Peaks:
    tree_base: int = 0
    tree_peak: int = 0
    free_base: int = 0
    free_low: int = 0
    rss_peak_kib: int = 0


def _allocated(root: Path) -> int:
    """Bytes allocated under ``root``, each inode once, not crossing into another filesystem."""
    seen: set[tuple[int, int]] = set()
    total = 0
    try:
        top = os.lstat(root).st_dev
    except OSError:
        return 0
    stack = [str(root)]
    while stack:
        path = stack.pop()
        try:
            names = os.listdir(path)
        except OSError:
            continue
        for name in names:
            full = os.path.join(path, name)
            try:
                st = os.lstat(full)
            except OSError:
                continue
            if st.st_dev != top or (st.st_dev, st.st_ino) in seen:
                continue
            seen.add((st.st_dev, st.st_ino))
            total += st.st_blocks * 512
            if os.path.isdir(full) and not os.path.islink(full):
                stack.append(full)
    return total


def _vm_hwm_kib(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/status") as handle:
            for line in handle:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def _free(path: Path) -> int:
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize


def _fill_command(mode: str, bound_mib: int) -> str:
    if mode == "one-file":
        # One file the size of the whole bound, then two more the full volume refuses (as in the issue).
        return "; ".join(f"head -c {bound_mib}M /dev/zero > big{i}.bin 2>&1 | tail -1" for i in (1, 2, 3))
    # Distinct 4 MiB files (random: identical ones would be one blob) until the volume is full.
    return "i=0; while head -c 4M /dev/urandom > f$i.bin 2>/dev/null; do i=$((i+1)); done; echo $i"


def _script(path: Path, mode: str, bound_mib: int) -> Path:
    fill = _fill_command(mode, bound_mib)
    script = {
        "schema_version": 1,
        "model": "scripted-fill",
        "cells": [
            {
                "match": {"task": "*"},
                "sessions": [
                    {
                        "turns": [
                            {"tool_calls": [{"name": "Bash", "input": {"command": f"{fill}; du -sm ."}}]},
                            {"text": "Done."},
                        ]
                    }
                ],
            }
        ],
    }
    path.write_text(yaml.safe_dump(script, sort_keys=False))
    return path


def run_filling_agent(
    tasks: Path, tmp_path: Path, private_tmp: Path, mode: str, bound_mib: int
) -> tuple[Peaks, dict]:
    """Run one baseline cell whose agent fills ``bound_mib``; the sampled peaks and the row."""
    out = tmp_path / "out"
    script = _script(tmp_path / "fill.yaml", mode, bound_mib)
    argv = [sys.executable, "-m", "workflow_bench.runner", "--provider", "scripted", "--script", str(script)]
    argv += ["--tasks", str(tasks), "--arms", "baseline", "--runs", "1", "--out", str(out)]
    argv += ["--cell-disk-mib", str(bound_mib)]
    peaks = Peaks(tree_base=_allocated(private_tmp), free_base=_free(private_tmp))
    peaks.tree_peak, peaks.free_low = peaks.tree_base, peaks.free_base
    env = {**os.environ, "TMPDIR": str(private_tmp)}
    proc = subprocess.Popen(argv, cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            peaks.tree_peak = max(peaks.tree_peak, _allocated(private_tmp))
            peaks.free_low = min(peaks.free_low, _free(private_tmp))
            hwm = _vm_hwm_kib(proc.pid)
            if hwm is not None:
                peaks.rss_peak_kib = max(peaks.rss_peak_kib, hwm)
            time.sleep(0.1)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        output, _ = proc.communicate(timeout=TIMEOUT_S)
    finally:
        done.set()
        sampler.join()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode in (0, 1), output.decode("utf-8", "replace")[-4000:]
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert len(rows) == 1, rows
    return peaks, rows[0]


@pytest.mark.parametrize("mode", ["one-file", "many-files"])
def test_an_agent_at_its_disk_bound_costs_the_host_at_most_the_bound_plus_overhead(
    mode, task_file_for, tmp_path, private_tmpdir, bwrap_bin, claude_bin
) -> None:
    needs_root("the cell's disk bound is its own loop volume")
    tasks = task_file_for("trivial-amount-grouping")
    peaks, row = run_filling_agent(tasks, tmp_path, private_tmpdir, mode, BOUND_MIB)
    grown = (peaks.tree_peak - peaks.tree_base) / MIB
    fallen = (peaks.free_base - peaks.free_low) / MIB
    rss = peaks.rss_peak_kib / 1024
    print(f"{mode}, bound {BOUND_MIB} MiB: work root grew {grown:.0f} MiB, ", end="")
    print(f"host free fell {fallen:.0f} MiB, rss {rss:.0f} MiB")
    # The agent really filled its bound (else the test proves nothing) and was charged for it.
    assert row["resource_limits"]["disk_mib"] == BOUND_MIB, row["resource_limits"]
    assert row["error_kind"] == "resource-limit", (row["error_kind"], row["error_detail"])
    assert "disk limit" in str(row["error_detail"]), row["error_detail"]
    assert grown >= BOUND_MIB * 0.9, f"the agent wrote only {grown:.0f} MiB"
    cli_copy = Path(claude_bin).stat().st_size / MIB
    allowed = BOUND_MIB * 1.05 + 8 + HOST_OVERHEAD_MIB + cli_copy
    assert grown <= allowed, f"the work root grew {grown:.0f} MiB, over {allowed:.0f} MiB"
    assert 0 < rss <= RUNNER_RSS_MIB, (rss, RUNNER_RSS_MIB)


@pytest.mark.parametrize("defended", [True, False], ids=["defended", "caps-lifted"])
def test_the_host_cost_canary_attack_and_its_negative_control(defended, monkeypatch, bwrap_bin, claude_bin):
    """The canary's attack (``canary/attacks_host_cost.py``) blocked; with the patch view's caps
    lifted (the defence removed) the same cell is NOT BLOCKED: the judge can fail."""
    needs_root("the cell's disk bound is its own loop volume")
    from workflow_bench.canary.attacks_host_cost import run_host_cost_cell
    from workflow_bench.claude_cli import claude_version
    from workflow_bench.workspace import patch as patch_module

    if not defended:
        monkeypatch.setattr(patch_module, "MAX_BLOB_BYTES", 1 << 40)
        monkeypatch.setattr(patch_module, "MAX_VIEW_IMPORT_BYTES", 1 << 40)
    lines: list[str] = []
    (verdict,) = run_host_cost_cell(
        claude_bin=claude_bin,
        claude_version=claude_version(claude_bin),
        bwrap_bin=bwrap_bin,
        progress=lines.append,
    )
    print(f"{'defended' if defended else 'caps lifted'}: blocked={verdict.blocked} {verdict.observed}")
    assert verdict.blocked is defended, (verdict.observed, lines[-20:])
    if not defended:
        assert "attack did not take" not in verdict.observed, verdict.observed
