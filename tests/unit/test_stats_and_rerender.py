"""Paired statistics (pass@k, sign test, bootstrap CI) and the re-render entry point."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import pytest

from tests.builders import sweep_record, sweep_row, sweep_runs, write_sweep
from workflow_bench.report.cli import main as rerender_main
from workflow_bench.reports import stats
from workflow_bench.reports.stats import pass_at_k, pass_hat_k
from workflow_bench.reports.sweep_record import AgentScriptRecord

pytestmark = pytest.mark.unit


# The statistics are typed documents (reports/stats_model.py); these tests read their JSON form,
# the keys stats.json keeps.
def summarize_deltas(deltas):
    return stats.summarize_deltas(deltas).model_dump(mode="json")


def mcnemar(rows, arm, reference):
    return stats.mcnemar(rows, arm, reference).model_dump(mode="json")


def paired_statistics(rows, **kwargs):
    return stats.paired_statistics(rows, **kwargs).model_dump(mode="json")


def test_pass_at_k_unbiased_estimator() -> None:
    assert pass_at_k(3, 1, 1) == pytest.approx(1 / 3)
    assert pass_at_k(3, 1, 2) == pytest.approx(2 / 3)  # 1 - C(2,2)/C(3,2)
    assert pass_at_k(3, 1, 3) == 1.0
    assert pass_at_k(3, 0, 3) == 0.0
    assert pass_hat_k(3, 2, 2) == pytest.approx(1 / 3)  # C(2,2)/C(3,2)
    assert pass_hat_k(3, 3, 3) == 1.0
    assert pass_hat_k(3, 2, 3) == 0.0
    with pytest.raises(ValueError):
        pass_at_k(2, 1, 3)


def test_sign_test_and_bootstrap_ci() -> None:
    summary = summarize_deltas([0.1, 0.2, 0.3, 0.4, 0.5, 0.6])
    assert summary["sign_test"] == {"positive": 6, "negative": 0, "zero": 0, "p_value": 0.03125}
    low, high = summary["ci95"]
    assert low <= summary["median_delta"] <= high and 0.1 <= low < high <= 0.6
    mixed = summarize_deltas([0.1, -0.1, 0.0])
    assert mixed["sign_test"]["p_value"] == 1.0 and mixed["sign_test"]["zero"] == 1
    one = summarize_deltas([0.2])
    assert one["ci95"] is None and one["median_delta"] == 0.2  # no CI from a single task
    assert summarize_deltas([])["sign_test"]["p_value"] is None


def test_paired_statistics_per_arm_and_candidate() -> None:
    rows = []
    for task in ("t1", "t2", "t3"):
        rows += sweep_runs(3, task, "baseline", cost_usd=1.0, skill_invoked=None)
        rows += [
            *sweep_runs(2, task, "workflow", cost_usd=2.0),
            sweep_row(task, "workflow", 2, resolved=False),
        ]
        rows += sweep_runs(3, task, "candidate_workflow", cost_usd=1.5)
    arms = ["workflow", "candidate_workflow", "baseline"]
    stats = paired_statistics(rows, arms=arms, tasks=["t1", "t2", "t3"], runs=3)
    pairs = {(c["arm"], c["reference"]): c for c in stats["comparisons"]}
    assert set(pairs) == {
        ("workflow", "baseline"),
        ("candidate_workflow", "baseline"),
        ("candidate_workflow", "workflow"),
    }
    vs_base = pairs[("workflow", "baseline")]
    assert vs_base["cost_usd"]["median_delta"] == 1.0
    assert vs_base["resolve_rate"]["median_delta"] == pytest.approx(-1 / 3, abs=1e-6)
    assert vs_base["resolve_rate"]["sign_test"]["negative"] == 3
    assert stats["pass_k"]["workflow"]["1"]["pass_at_k"] == pytest.approx(2 / 3, abs=1e-6)
    assert stats["pass_k"]["workflow"]["3"]["pass_hat_k"] == 0.0
    assert stats["pass_k"]["workflow"]["2"]["pass_at_k"] == 1.0
    summary = stats["arms"]["workflow"]
    assert summary["resolve_rate"] == pytest.approx(6 / 9, abs=1e-6)
    assert summary["resolve_rate_ci95"][0] < summary["resolve_rate"] < summary["resolve_rate_ci95"][1]
    json.dumps(stats, allow_nan=False)
    assert all(math.isfinite(v) for v in summary["resolve_rate_ci95"])


def test_rerender_is_byte_identical_and_reports_only_what_exists(tmp_path: Path, capsys) -> None:
    rows = sweep_runs(3, "t1", "workflow") + sweep_runs(3, "t1", "candidate_workflow", cost_usd=0.9)
    out = write_sweep(tmp_path / "out", sweep_record(), rows)
    names = ["report.md", "report.html", "stats.json", "promotion.json"]
    before = {n: (out / n).read_bytes() for n in names}
    for name in names:
        (out / name).unlink()
    assert rerender_main([str(out)]) == 0
    assert {n: (out / n).read_bytes() for n in names} == before
    assert "[measurement-health] candidate_workflow: OBSERVED_OK" in capsys.readouterr().out
    report = before["report.md"].decode()
    # No review arm ran and nothing was scored: no review table (it used to print all n/a).
    assert "## Review quality" not in report
    assert "promotion is disabled" not in report
    assert "## Promotion" in report and "**promote**" in report and "## Paired statistics" in report
    assert "`transcripts`" in report and "`provider`" in report  # the main-loop warning's pointer


def test_rerender_refuses_a_directory_without_a_finished_sweep(tmp_path: Path, capsys) -> None:
    assert rerender_main([str(tmp_path)]) == 2
    assert "sweep.json" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("provider", "agent_script", "named"),
    [
        (
            "scripted",
            AgentScriptRecord(path="agents/oracle.yaml", sha256="ab" * 32),
            "- Agent: the agent script `agents/oracle.yaml` (sha256 `abababababab`)",
        ),
        ("scripted", None, "- Agent: an agent script this sweep.json does not record"),
        ("anthropic", None, "- Agent: the model `scripted-sonnet`"),
        ("predictions", None, "- Agent: none: a predictions file was regraded"),
    ],
)
def test_the_report_names_the_agent_script_or_model_that_drove_the_sweep(
    tmp_path: Path, provider: str, agent_script: AgentScriptRecord | None, named: str
) -> None:
    """Issue 32: report.md said "scripted" but not which script; sweep.json records the script
    (a record from before it was recorded still renders, and says so)."""
    record = replace(sweep_record(arms=("workflow",)), provider=provider, model="scripted-sonnet")
    record = replace(record, agent_script=agent_script)
    out = write_sweep(tmp_path / "out", record, sweep_runs(1, "t1", "workflow"))
    if agent_script is None:  # as an older sweep.json was written: no agent_script key at all
        raw = json.loads((out / "sweep.json").read_text())
        del raw["agent_script"]
        (out / "sweep.json").write_text(json.dumps(raw))
        (out / "report.md").unlink()
        assert rerender_main([str(out)]) == 0
    assert named in (out / "report.md").read_text().split("## Run provenance", 1)[1]
