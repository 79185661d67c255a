"""The containment canary, run for real: every attack blocked, and the command's contract."""

from __future__ import annotations

import pytest

from workflow_bench.canary import declared_attacks

ATTACKS = declared_attacks()  # every suite's attacks, the judging breaker's pseudo-attack included
TOTAL = len(ATTACKS)

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
    for name in ATTACKS:
        assert f"{name} " in table, name
    assert "NOT BLOCKED" not in table
    assert code == 0 and (out / "results.jsonl").exists()


def test_canary_command_refuses_a_missing_cli_before_any_attack(tmp_path, capsys, bwrap_bin):
    """``python -m workflow_bench.canary``'s own contract, cheaply: preflight failure is exit 2."""
    from workflow_bench.canary import main

    code = main(["--claude-bin", str(tmp_path / "no-such-claude")])
    printed = capsys.readouterr().out
    assert code == 2 and printed.startswith("preflight failed:"), printed
    assert "blocked" not in printed
