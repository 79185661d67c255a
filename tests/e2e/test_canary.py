"""The containment canary, run for real: every attack blocked, and the command's contract."""

from __future__ import annotations

import pytest

from workflow_bench.canary._suite import ATTACKS as SUITE_ATTACKS  # every module registered there
from workflow_bench.canary.attacks_budgets import BUDGET_ATTACKS
from workflow_bench.canary.attacks_confine import CONFINE_ATTACKS
from workflow_bench.canary.attacks_fork import FORK_ATTACKS
from workflow_bench.canary.attacks_graphs import GRAPH_ATTACKS
from workflow_bench.canary.attacks_host_cost import HOST_COST_ATTACKS
from workflow_bench.canary.attacks_judging import ATTACKS as JUDGING_ATTACKS
from workflow_bench.canary.attacks_limits import LIMIT_ATTACKS
from workflow_bench.canary.attacks_relay import BREACH_ATTACKS
from workflow_bench.canary.attacks_replay import REPLAY_ATTACKS
from workflow_bench.canary.attacks_sealing import SEALING_ATTACKS

# The judging suite adds one verdict per attack plus the breaker's.
ATTACKS = (
    *SUITE_ATTACKS, *LIMIT_ATTACKS, *HOST_COST_ATTACKS, *BUDGET_ATTACKS, *REPLAY_ATTACKS, *BREACH_ATTACKS,
    *FORK_ATTACKS, *CONFINE_ATTACKS,
    *JUDGING_ATTACKS, *SEALING_ATTACKS, *GRAPH_ATTACKS,
)  # fmt: skip
TOTAL = len(ATTACKS) + 1

pytestmark = pytest.mark.e2e


def test_runner_canary_flag_blocks_every_attack_before_the_sweep(tmp_path, capsys, bwrap_bin, claude_bin):
    """The whole suite, for real, once: through ``runner --canary`` (the gate a paid sweep uses).

    The command-line entry (``python -m workflow_bench.canary``, same ``run_canary``) is what
    ``.ci/run`` runs first; running the suite a second time here would only repeat it.
    """
    from workflow_bench import runner

    from .conftest import DEMO_TASKS

    out = tmp_path / "out"
    argv = ["--tasks", str(DEMO_TASKS), "--provider", "scripted", "--canary", "--arms", "baseline"]
    code = runner.main([*argv, "--out", str(out)])
    printed = capsys.readouterr().out
    assert f"blocked {TOTAL}/{TOTAL}" in printed, printed[-8000:]  # the table, to see what was not
    table = printed[: printed.index(f"blocked {TOTAL}/{TOTAL}")]  # the table comes before any cell
    for attack in (*ATTACKS, *JUDGING_ATTACKS):
        assert f"{attack.name} " in table, attack.name
    assert "breaker-abuse " in table
    assert "NOT BLOCKED" not in table
    assert code == 0 and (out / "results.jsonl").exists()


def test_canary_command_refuses_a_missing_cli_before_any_attack(tmp_path, capsys, bwrap_bin):
    """``python -m workflow_bench.canary``'s own contract, cheaply: preflight failure is exit 2."""
    from workflow_bench.canary import main

    code = main(["--claude-bin", str(tmp_path / "no-such-claude")])
    printed = capsys.readouterr().out
    assert code == 2 and printed.startswith("preflight failed:"), printed
    assert "blocked" not in printed
