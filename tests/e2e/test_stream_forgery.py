"""The agent cannot write its own row: forged stream events are blocked, and caught if they land.

The attack (tests/e2e/scripts/forge-stream.yaml) is written as an adversary would, through Bash:
find the CLI, append a forged Skill pair and a forged successful result with 1/1 tokens to
/proc/<cli>/fd/1. Two defences, each tested with the other removed:

1. tool confinement (sandbox/_confine.py; and the execute-only CLI binary, sandbox/_bwrap.py): the
   write and the environ read are refused;
2. the wire cross-check (evidence.py): with confinement removed on purpose, the forged events
   land in the stream, and the row says ``evidence-tampered`` with the provider's real usage.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.builders import result_dicts
from workflow_bench import runner
from workflow_bench.sandbox import _bwrap, _environment, _userns

from .conftest import tool_results

pytestmark = pytest.mark.e2e
SCRIPT = Path(__file__).parent / "scripts" / "forge-stream.yaml"
SERVED = {
    "input_tokens": 50100,
    "output_tokens": 7010,
    "cache_creation_input_tokens": 0,
    "cache_read_input_tokens": 0,
}


def _sweep(task_file_for, tmp_path) -> tuple[dict, str, list[dict]]:
    out = tmp_path / "out"
    runner.main(
        ["--tasks", str(task_file_for("trivial-amount-grouping")), "--provider", "scripted",
         "--script", str(SCRIPT), "--arms", "workflow_direct", "--out", str(out)]
    )  # fmt: skip
    (row,) = result_dicts(out)
    seen = tool_results(b"".join((out / t["path"]).read_bytes() for t in row["transcript_artifacts"]))
    wire = [
        json.loads(line) for name in row["wire_artifacts"] for line in (out / name).read_text().splitlines()
    ]
    return row, seen, wire


def test_confined_tools_cannot_reach_the_cli(task_file_for, tmp_path, bwrap_bin, claude_bin):
    row, seen, wire = _sweep(task_file_for, tmp_path)
    assert "CLI-PID:2" in seen or "CLI-PID:" in seen
    assert "FD1-WRITE:denied" in seen and "ENVIRON:denied" in seen, seen
    # Nothing landed: the row is the honest one (the skill was never called).
    assert row["error_kind"] == "skill-not-invoked" and row["skill_invoked"] is False
    assert {k: row[k] for k in SERVED} == SERVED == row["usage_wire"]
    assert sum(line["usage"]["input_tokens"] for line in wire) == SERVED["input_tokens"]


def test_with_confinement_removed_the_forgery_lands_and_is_caught(
    task_file_for, tmp_path, monkeypatch, bwrap_bin, claude_bin
):
    unconfined = _environment.shell_prefix_script
    monkeypatch.setattr(
        _environment, "shell_prefix_script", lambda *a, **k: unconfined(*a, **{**k, "confine": None})
    )
    # A root runner's cell uid is a second wall: the CLI's stdout pipe belongs to host root, which
    # a tool of the cell uid cannot reopen through /proc. Mapped to the runner's uid, as before.
    monkeypatch.setattr(_userns, "_is_root", lambda: False)
    # And a third: the CLI runs from an execute-only copy, so it is not dumpable and its /proc/<pid>
    # entries (fd/1 included) are closed to every process of the cell. The readable original, here.
    monkeypatch.setattr(_bwrap, "exec_only_copy", lambda claude_bin, _runtime_dir: claude_bin)
    row, seen, _ = _sweep(task_file_for, tmp_path)
    assert "FD1-WRITE:ok" in seen, seen  # the defence really was removed: the forgery landed
    assert row["error_kind"] == "evidence-tampered", (row["error_kind"], row["error_detail"])
    assert row["ok"] is False and row["resolved"] is False
    assert "never made" in row["error_detail"] or "result events" in row["error_detail"]
    # The row's usage is what the provider served, never the forged 1/1.
    assert {k: row[k] for k in SERVED} == SERVED
