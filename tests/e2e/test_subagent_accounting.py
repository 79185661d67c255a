"""Subagent spend through runner.main(): every token counted, the main-loop figure flagged partial.

Two ways a sweep spawns subagents, both through the real CLI in the real sandbox against the
scripted provider (which serves subagents from the script's ``subagents`` list): the Agent tool,
which every arm may use (transcripts then equal the provider ledger exactly), and a forked skill
(``context: fork``), whose final message the CLI never shows the parent (transcripts fall short).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.builders import result_dicts
from workflow_bench import runner

from .conftest import REPO_ROOT

pytestmark = pytest.mark.e2e
SCRIPT = Path(__file__).parent / "scripts" / "subagent.yaml"


def _forking_toolkit(tmp_path: Path) -> Path:
    toolkit = tmp_path / "toolkit"
    shutil.copytree(REPO_ROOT / "workflow_bench" / "corpus" / "toolkit", toolkit)
    skill = toolkit / "skills" / "work" / "SKILL.md"
    text = skill.read_text()
    assert text.startswith("---\n")
    skill.write_text("---\ncontext: fork\nagent: general-purpose\n" + text[4:])
    return toolkit


def test_subagent_spend_is_counted_and_the_main_loop_flagged_partial(
    task_file_for, tmp_path, bwrap_bin, claude_bin
):
    out = tmp_path / "out"
    code = runner.main(
        [
            "--tasks",
            str(task_file_for("trivial-amount-grouping")),
            "--provider",
            "scripted",
            "--script",
            str(SCRIPT),
            "--toolkit",
            str(_forking_toolkit(tmp_path)),
            "--arms",
            "workflow_direct",
            "--out",
            str(out),
        ]
    )
    (row,) = result_dicts(out)
    assert code in (0, 1), code
    assert row["skill_invoked"] is True
    ledger = [json.loads(line) for line in (out / "provider-ledger.jsonl").read_text().splitlines()]
    assert [e["subagent"] for e in ledger] == [None, 0, 0, None]
    main, seen, served = row["usage_main_loop"], row["usage_transcripts"], row["usage_provider"]
    assert main == {
        "input_tokens": 300,
        "cache_creation_input_tokens": 4,
        "cache_read_input_tokens": 6,
        "output_tokens": 30,
    }
    assert served == {
        "input_tokens": 3300,
        "cache_creation_input_tokens": 44,
        "cache_read_input_tokens": 66,
        "output_tokens": 330,
    }
    # Transcripts see the subagent's tool turn; a fork's final message reaches the parent nowhere
    # (CLI 2.1.332), so they sit between the main loop and what the provider served.
    assert main["input_tokens"] < seen["input_tokens"] == 1300 < served["input_tokens"]
    report = (out / "report.md").read_text()
    assert "main loop < transcripts (subagent spend)" in report
    assert "transcripts < provider (the stream omits messages)" in report
    assert "**The main-loop figure is partial for 1 task×arm(s)**" in report


AGENT_SCRIPT = Path(__file__).parent / "scripts" / "agent-subagent.yaml"


def test_agent_subagent_in_a_sweep_transcripts_equal_the_ledger(
    task_file_for, tmp_path, bwrap_bin, claude_bin
):
    """Every arm may spawn Agent subagents; then the transcript sum is exact and the main loop is partial."""
    out = tmp_path / "out"
    argv = ["--tasks", str(task_file_for("trivial-amount-grouping")), "--provider", "scripted"]
    runner.main([*argv, "--script", str(AGENT_SCRIPT), "--arms", "baseline", "--out", str(out)])
    (row,) = result_dicts(out)
    assert row["ok"] is True, row["error_detail"]
    ledger = [json.loads(line) for line in (out / "provider-ledger.jsonl").read_text().splitlines()]
    assert sorted(str(e["subagent"]) for e in ledger) == ["0", "0", "None", "None"]
    served = {k: sum(e["usage"][k] for e in ledger) for k in row["usage_provider"]}
    assert row["usage_provider"] == served
    assert row["usage_transcripts"] == row["usage_provider"]  # every token counted, exactly once
    assert row["usage_main_loop"]["input_tokens"] == 300 < row["usage_transcripts"]["input_tokens"] == 3300
    report = (out / "report.md").read_text()
    assert "**The main-loop figure is partial for 1 task×arm(s)**" in report
