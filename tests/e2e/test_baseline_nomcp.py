"""baseline_nomcp is the bare agent: the seeded skills are masked and slash commands are off.

That is its only difference from `baseline`, so both arms run the same scripted probe (list the
skills directory, read a seeded SKILL.md) and the test compares what each session was shown,
and what each CLI announced in its start event (`system/init`: skills, slash commands).
`baseline` is the control: it must see the skills and the commands, or the probe proves nothing.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.builders import result_dicts
from workflow_bench import runner

from .conftest import tool_results

pytestmark = pytest.mark.e2e
SCRIPT = Path(__file__).parent / "scripts" / "nomcp.yaml"
SEEDED = {"plan", "review", "work"}  # workflow_bench/corpus/toolkit/skills


def _init_event(transcript: Path) -> dict:
    for line in transcript.read_text().splitlines():
        event = json.loads(line)
        if event.get("type") == "system" and event.get("subtype") == "init":
            return event
    raise AssertionError(f"no init event in {transcript}")


def test_baseline_nomcp_cannot_see_skills_and_has_slash_commands_off(
    task_file_for, tmp_path, bwrap_bin, claude_bin
):
    tasks = task_file_for("trivial-amount-grouping")
    out = tmp_path / "out"
    argv = ["--tasks", str(tasks), "--provider", "scripted", "--script", str(SCRIPT)]
    runner.main([*argv, "--arms", "baseline", "baseline_nomcp", "--out", str(out)])
    rows = {r["arm"]: r for r in result_dicts(out)}
    assert set(rows) == {"baseline", "baseline_nomcp"}
    seen = {}
    for arm in rows:
        (transcript,) = (out / "transcripts").glob(f"trivial-amount-grouping-{arm}-run0-s0-*.jsonl")
        results = tool_results(transcript.read_bytes())
        assert "PROBE-DONE" in results, (arm, results)  # the probe ran: its output is evidence
        listed = results.split("SKILLS:[", 1)[1].split("]", 1)[0].split()
        seen[arm] = (set(listed), "name: plan" in results, _init_event(transcript))

    listed, read_skill, init = seen["baseline"]
    assert listed == SEEDED and read_skill
    assert set(init["skills"]) >= SEEDED and set(init["slash_commands"]) >= SEEDED
    assert "compact" in init["slash_commands"]  # built-in commands are on for the control

    listed, read_skill, init = seen["baseline_nomcp"]
    assert listed == set() and not read_skill, "the seeded skills must be masked"
    assert not SEEDED & set(init["skills"]), init["skills"]
    assert init["slash_commands"] == [], "slash commands must be off (--disable-slash-commands)"
