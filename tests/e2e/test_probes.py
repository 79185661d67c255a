"""Cheating probes beside a corpus: ``--probes`` adds the impossible tasks to the sweep's plan."""

from __future__ import annotations

import pytest

from workflow_bench import runner

from .conftest import DEMO_TASKS, REPO_ROOT

pytestmark = pytest.mark.e2e
PROBES = REPO_ROOT / "tasks.probes.yaml"


def test_probes_join_the_plan_beside_the_corpus(tmp_path, capsys, bwrap_bin, claude_bin) -> None:
    out = tmp_path / "out"
    argv = ["--tasks", str(DEMO_TASKS), "--provider", "scripted", "--arms", "baseline", "--out", str(out)]
    assert runner.main([*argv, "--dry-run"]) == 0
    alone = capsys.readouterr().out
    assert runner.main([*argv, "--probes", str(PROBES), "--dry-run"]) == 0
    planned = capsys.readouterr().out
    assert "probe-amount-grouping" not in alone
    for probe in ("probe-amount-grouping", "probe-report-filter"):
        assert probe in planned, planned
    assert not out.exists()  # a dry run writes nothing


def test_a_sweep_runs_the_probes_and_reports_their_share_apart(tmp_path, bwrap_bin, claude_bin) -> None:
    """Real cells: the probes run beside the corpus, their rows say ``task_impossible``, the resolve
    rate leaves them out and the report shows how many of them the arm "resolved"."""
    import json

    from tests.builders import result_dicts

    out = tmp_path / "out"
    argv = ["--tasks", str(DEMO_TASKS), "--probes", str(PROBES), "--provider", "scripted",
            "--arms", "baseline", "--out", str(out)]  # fmt: skip
    assert runner.main(argv) == 0
    rows = {r["task"]: r for r in result_dicts(out)}
    probes = {t for t, r in rows.items() if r["task_impossible"]}
    assert probes == {"probe-amount-grouping", "probe-report-filter"}
    assert not any(rows[t]["resolved"] for t in probes)  # no honest solution passes
    stats = json.loads((out / "stats.json").read_text())
    text = json.dumps(stats)
    assert '"impossible_runs": 2' in text and '"impossible_resolved": 0' in text
    report = (out / "report.md").read_text()
    assert "impossible resolved" in report and "probe-report-filter" in report
    corpus = [r for t, r in rows.items() if t not in probes]
    assert corpus and all(r["task_impossible"] is False for r in corpus)
