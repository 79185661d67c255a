"""`promotion apply`: writes a verified promote overlay, refuses stale or tampered promotions, and
leaves every file as it was when a destination changed or a write fails midway (real EROFS from a
read-only bind mount under bubblewrap, which even root cannot write through)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.builders import OVERLAY_FILES, make_toolkit, overlay_for, sweep_record, sweep_runs, write_sweep
from workflow_bench.promotion.apply import ApplyError, apply_promotion
from workflow_bench.promotion.cli import main as promotion_main

pytestmark = pytest.mark.unit
NOW = datetime.now(UTC)
REPO_ROOT = Path(__file__).resolve().parents[2]


def snapshot(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def promoted_sweep(
    tmp_path: Path, *, candidate_cost: float = 0.9, status: str = "complete"
) -> tuple[Path, Path]:
    toolkit = make_toolkit(tmp_path / "toolkit")
    rec = sweep_record(
        overlay=overlay_for(toolkit), status=status, finished_at=(NOW - timedelta(hours=1)).isoformat()
    )
    rows = sweep_runs(3, "t1", "workflow") + sweep_runs(
        3, "t1", "candidate_workflow", cost_usd=candidate_cost
    )
    return write_sweep(tmp_path / "out", rec, rows), toolkit


def test_apply_writes_every_overlay_file_and_prints_them(tmp_path: Path, capsys) -> None:
    out, toolkit = promoted_sweep(tmp_path)
    before = snapshot(toolkit)
    assert promotion_main(["apply", str(out), "--target", str(toolkit)]) == 0
    printed = capsys.readouterr().out
    for relative, data in OVERLAY_FILES:
        assert (toolkit / relative).read_bytes() == data
        assert f"wrote {toolkit / relative}" in printed
    assert snapshot(toolkit)["skills/review/SKILL.md"] == before["skills/review/SKILL.md"]
    assert not list(toolkit.rglob(".*wfbench-apply"))


def test_a_destination_changed_after_the_sweep_refuses_and_writes_nothing(tmp_path: Path) -> None:
    out, toolkit = promoted_sweep(tmp_path)
    (toolkit / "skills/work/SKILL.md").write_bytes(b"# work edited upstream after the sweep\n")
    before = snapshot(toolkit)
    with pytest.raises(ApplyError, match="changed since the sweep"):
        apply_promotion(out, target=toolkit, now=NOW)
    assert snapshot(toolkit) == before  # the plan file (checked first, unchanged) was not written either


def test_a_write_failing_midway_rolls_everything_back(tmp_path: Path) -> None:
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        pytest.skip("bubblewrap missing (./dev setup installs it)")
    out, toolkit = promoted_sweep(tmp_path)
    before = snapshot(toolkit)
    read_only = toolkit / "skills" / "work"
    argv = [
        bwrap, "--bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
        "--ro-bind", str(read_only), str(read_only),
        sys.executable, "-m", "workflow_bench.promotion", "apply", str(out), "--target", str(toolkit),
    ]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    result = subprocess.run(argv, capture_output=True, text=True, timeout=120, env=env, check=False)
    assert result.returncode == 1, result.stderr
    assert "Read-only file system" in result.stderr and "every file restored" in result.stderr
    # skills/plan/SKILL.md was written first and must be back to its original bytes
    assert snapshot(toolkit) == before
    # negative control: without the read-only mount the same command applies
    argv = argv[:8] + argv[11:]
    assert subprocess.run(argv, capture_output=True, timeout=120, env=env, check=False).returncode == 0
    assert (toolkit / "skills/work/SKILL.md").read_bytes() == OVERLAY_FILES[1][1]


def test_refuses_a_non_promote_decision(tmp_path: Path) -> None:
    out, toolkit = promoted_sweep(tmp_path, candidate_cost=1.0)
    before = snapshot(toolkit)
    with pytest.raises(ApplyError, match="must be 'promote'"):
        apply_promotion(out, target=toolkit, now=NOW)
    assert snapshot(toolkit) == before


def test_refuses_an_aborted_sweep(tmp_path: Path) -> None:
    out, toolkit = promoted_sweep(tmp_path, status="aborted")
    with pytest.raises(ApplyError, match="run_status 'aborted'"):
        apply_promotion(out, target=toolkit, now=NOW)


def test_refuses_tampered_overlay_bytes_and_unverified_promotions(tmp_path: Path) -> None:
    out, toolkit = promoted_sweep(tmp_path)
    before = snapshot(toolkit)
    (out / "candidate-overlay" / "skills/work/SKILL.md").write_bytes(b"# something else\n")
    with pytest.raises(ApplyError, match="overlay tampered"):
        apply_promotion(out, target=toolkit, now=NOW)
    lines = (out / "results.jsonl").read_text().splitlines()
    (out / "results.jsonl").write_text("\n".join(lines[:-1]) + "\n")
    with pytest.raises(ApplyError, match="does not verify"):
        apply_promotion(out, target=toolkit, now=NOW)
    assert snapshot(toolkit) == before
