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
