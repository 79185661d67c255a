"""The containment canary, run for real: every attack blocked, and the command's contract."""

from __future__ import annotations

import pytest

from workflow_bench.canary import main
from workflow_bench.canary._suite import ATTACKS as SUITE_ATTACKS  # every module registered there
from workflow_bench.canary.attacks_graphs import GRAPH_ATTACKS
from workflow_bench.canary.attacks_judging import ATTACKS as JUDGING_ATTACKS
from workflow_bench.canary.attacks_limits import LIMIT_ATTACKS
from workflow_bench.canary.attacks_replay import REPLAY_ATTACKS

# The judging suite adds one verdict per attack plus the breaker's.
ATTACKS = (*SUITE_ATTACKS, *LIMIT_ATTACKS, *REPLAY_ATTACKS, *JUDGING_ATTACKS, *GRAPH_ATTACKS)
TOTAL = len(ATTACKS) + 1

pytestmark = pytest.mark.e2e


def test_canary_blocks_every_attack(capsys, bwrap_bin, claude_bin):
    code = main([])
    table = capsys.readouterr().out
    assert table.strip().splitlines()[-1] == f"blocked {TOTAL}/{TOTAL}", table
    assert code == 0
    for attack in (*ATTACKS, *JUDGING_ATTACKS):
        assert f"{attack.name} " in table
    assert "breaker-abuse " in table


def test_runner_canary_flag_runs_the_suite_before_anything(tmp_path, capsys, bwrap_bin, claude_bin):
    from workflow_bench import runner

    from .conftest import DEMO_TASKS

    out = tmp_path / "out"
    argv = ["--tasks", str(DEMO_TASKS), "--provider", "scripted", "--canary", "--arms", "baseline"]
    code = runner.main([*argv, "--out", str(out)])
    printed = capsys.readouterr().out
    assert f"blocked {TOTAL}/{TOTAL}" in printed
    assert code == 0 and (out / "results.jsonl").exists()
