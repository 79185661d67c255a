"""Budgets through runner.main(): submission stops, finished rows are kept, exit 1, reason reported."""

from __future__ import annotations

import json

import pytest

from workflow_bench import runner

pytestmark = pytest.mark.e2e


@pytest.mark.parametrize(
    ("flag", "why"),
    [(["--max-cost-usd", "0.000001"], "budget-cost"), (["--max-runtime", "0.5"], "budget-runtime")],
)
def test_budget_ends_the_sweep_as_aborted_with_partial_evidence(
    flag, why, task_file_for, tmp_path, bwrap_bin, claude_bin
):
    tasks = task_file_for("trivial-amount-grouping")
    out = tmp_path / "out"
    code = runner.main(
        ["--tasks", str(tasks), "--provider", "scripted", "--arms", "baseline", "--runs", "3",
         *flag, "--out", str(out)]
    )  # fmt: skip
    assert code == 1
    results = out / "results.jsonl"
    rows = [json.loads(line) for line in results.read_text().splitlines()] if results.exists() else []
    not_run = [json.loads(line) for line in (out / "not-run.jsonl").read_text().splitlines()]
    assert {r["why"] for r in not_run} == {why}
    assert sorted([r["run"] for r in rows] + [r["run"] for r in not_run]) == [0, 1, 2]
    if why == "budget-cost":
        # the first cell starts (no cost known yet), reports a cost above the limit, and stops the sweep
        assert [r["run"] for r in rows] == [0] and rows[0]["cost_usd"] > 0.000001
    report = (out / "report.md").read_text()
    assert "Sweep aborted" in report and flag[0] in report
