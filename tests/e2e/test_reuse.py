"""--reuse-results through runner.main(): the second sweep pays only candidates and canaries.

Sweep 1 runs the work overlay's four paired arms for two runs. Sweep 2 reuses
it: each incumbent arm (workflow, workflow_direct) keeps one paid canary cell
and reuses the other; every candidate cell is paid. The provider ledger of
sweep 2 (requests this sweep actually served) names exactly the paid cells.
"""

from __future__ import annotations

import json

import pytest

from workflow_bench import runner
from workflow_bench.report.cli import main as report_main

from .conftest import REPO_ROOT

pytestmark = pytest.mark.e2e
OVERLAY = REPO_ROOT / "workflow_bench" / "corpus" / "overlays" / "work-candidate"
ARMS = ["workflow", "candidate_workflow", "workflow_direct", "candidate_workflow_direct"]


def _lines(path):
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_reuse_pays_only_candidates_and_one_canary_per_incumbent_arm(
    task_file_for, tmp_path, bwrap_bin, claude_bin, capsys
):
    tasks = task_file_for("trivial-amount-grouping")
    args = ["--tasks", str(tasks), "--provider", "scripted", "--arms", *ARMS, "--runs", "2",
            "--candidate-overlay", str(OVERLAY), "--workers", "2"]  # fmt: skip
    first, second = tmp_path / "first", tmp_path / "second"
    assert runner.main([*args, "--out", str(first)]) == 0
    assert all(r["reused"] is False and r["runtime_digest"] for r in _lines(first / "results.jsonl"))

    # --dry-run prints the same choice the real sweep makes below, and pays and writes nothing.
    capsys.readouterr()
    dry = tmp_path / "dry"
    plan_args = [*args, "--out", str(dry), "--reuse-results", str(first), "--order", "longest-first"]
    assert runner.main([*plan_args, "--dry-run"]) == 0
    printed = capsys.readouterr().out
    assert "8 cells: 1 tasks × 2 runs × 4 arms" in printed
    assert "reused from --reuse-results: 2; to run: 6" in printed
    reuse_lines = sorted(line.strip() for line in printed.splitlines() if line.strip().startswith("reuse "))
    assert reuse_lines == ["reuse [trivial-amount-grouping][workflow][run 1]",
                           "reuse [trivial-amount-grouping][workflow_direct][run 1]"], printed  # fmt: skip
    assert len([line for line in printed.splitlines() if ". run " in line and "(predicted" in line]) == 6
    assert not dry.exists()
    assert runner.main([*plan_args, "--dry-run", "--canary"]) == 2
    assert "drop --canary" in capsys.readouterr().err

    assert runner.main([*args, "--out", str(second), "--reuse-results", str(first)]) == 0
    rows = _lines(second / "results.jsonl")
    assert sorted((r["arm"], r["run"]) for r in rows) == sorted((a, r) for a in ARMS for r in range(2))
    reused = {(r["arm"], r["run"]) for r in rows if r["reused"]}
    assert reused == {("workflow", 1), ("workflow_direct", 1)}  # run 0 of each incumbent is its paid canary
    paid = {(e["arm"], e["run"]) for e in _lines(second / "provider-ledger.jsonl")}
    assert paid == {(a, r) for a in ARMS for r in range(2)} - reused
    for row in (r for r in rows if r["reused"]):
        assert row["reused_from_dir"] == str(first.resolve())
        original = next(
            o for o in _lines(first / "results.jsonl") if (o["arm"], o["run"]) == (row["arm"], row["run"])
        )
        assert row["reused_from_recorded_at"] == original["recorded_at"]
        assert row["transcript_artifacts"] == original["transcript_artifacts"]  # re-hashed, same bytes
        for entry in row["transcript_artifacts"]:
            assert (second / entry["path"]).read_bytes() == (first / entry["path"]).read_bytes()
        assert row["wire_artifacts"] and row["wire_artifacts"] == original["wire_artifacts"]  # relay record
        for name in row["wire_artifacts"]:
            assert (second / name).read_bytes() == (first / name).read_bytes()
    report = (second / "report.md").read_text()
    assert "Rows reused from an earlier sweep (`--reuse-results`, not paid here): 2" in report
    assert f"| trivial-amount-grouping | workflow | 1 | `{first.resolve()}`" in report
    # the Scheduling section is re-rendered byte-identically from the directory alone
    before = (second / "report.md").read_bytes()
    (second / "report.md").unlink()
    assert report_main([str(second)]) == 0
    assert (second / "report.md").read_bytes() == before
