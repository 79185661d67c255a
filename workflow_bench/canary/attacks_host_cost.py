"""Canary attack on what the harness's own copies of the agent's work cost the host (issue 30 item 4).

One ``LimitCell`` with a 256 MiB disk bound: the agent fills it with one file as large as the
whole bound (a second one is refused: the volume is full) and leaves it there for the harness to
judge. What is judged is the host: while the cell ran, the bytes the harness added under the work
root *outside* the cell's own directory and volume image (the patch view, its import streams:
``canary.host_cost``) and the canary process's peak RSS over its start. Before the fix the patch
view read the file into the runner twice and stored it twice beside the cell (+2× the bound of
disk and of RSS); now a file over the view's caps is a one-line stand-in
(``workspace.patch``). Negative controls: with the view's caps lifted the same cell is NOT
BLOCKED (``tests/e2e/test_host_cost_bounds.py``, on the disk figure); with the file also read
whole (by hand once) the RSS figure fails it too.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from workflow_bench.judging.outcomes import ErrorKind
from workflow_bench.sandbox import CellLimits

from ._suite import AttackVerdict
from .attacks_limits import LimitAttack, LimitCell, LimitEvidence, _bash, run_limit_cells

MIB = 1024 * 1024
BOUND_MIB = 256
# What the harness may add beside a full cell: the view's content caps (16 MiB an import: two
# stored, one spooled at a time), git's pack index, the transcripts. Measured +18 MiB (README,
# Isolation); the caps lifted, +530 MiB.
HARNESS_OVERHEAD_BYTES = 96 * MIB
# The canary process's RSS growth during the cell (relay, provider, row assembly). Measured +2 MiB;
# with the file read whole (the old view), +257 MiB.
RSS_OVERHEAD_BYTES = 96 * MIB


def _host_cost(ev: LimitEvidence) -> tuple[bool, str]:
    if ev.disk_grown is None or ev.harness_grown is None or ev.rss_grown is None:
        return False, "host cost not measured (unknown is not blocked)"
    agent = ev.disk_grown - ev.harness_grown
    shown = f"agent {agent // MIB}M, harness +{ev.harness_grown // MIB}M disk +{ev.rss_grown // MIB}M rss"
    if ev.row.error_kind != ErrorKind.RESOURCE_LIMIT or "disk limit" not in str(ev.row.error_detail):
        return False, f"error_kind={ev.row.error_kind} (the bound was not filled: attack did not take)"
    if agent < BOUND_MIB * MIB * 9 // 10:
        return False, f"the agent wrote only {agent // MIB} MiB (attack did not take)"
    if ev.harness_grown > HARNESS_OVERHEAD_BYTES or ev.rss_grown > RSS_OVERHEAD_BYTES:
        return False, shown
    return True, shown


HOST_COST = LimitCell(
    "limits-host-cost",
    (
        LimitAttack(
            "judge-copies-of-a-full-bound",
            f"one {BOUND_MIB} MiB file (the whole bound) for the harness to copy, hash and diff",
            "harness adds ≤ 96 MiB disk and ≤ 96 MiB RSS beside the full cell",
            "Bash",
            _bash(
                f"for i in 1 2; do head -c {BOUND_MIB}M /dev/zero > big$i.bin 2>&1 | tail -1; done; "
                "ls -s big*"
            ),
            _host_cost,
        ),
    ),
    CellLimits(memory_mib=768, pids=128, disk_mib=BOUND_MIB),
)
HOST_COST_ATTACKS: tuple[LimitAttack, ...] = HOST_COST.attacks


def run_host_cost_cell(
    *, claude_bin: Path, claude_version: str, bwrap_bin: str, progress=print
) -> Sequence[AttackVerdict]:
    """The one host-cost cell; one verdict."""
    return run_limit_cells(
        claude_bin=claude_bin,
        claude_version=claude_version,
        bwrap_bin=bwrap_bin,
        progress=progress,
        cells=(HOST_COST,),
    )
