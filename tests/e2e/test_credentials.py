"""A planted key never reaches the agent, the transcripts, the rows or any output file.

Runs the `anthropic` provider path for real: the key given with
--anthropic-api-key is the one the scripted provider minted for the cell, so
the request only succeeds if the relay injected it — while the agent, which
dumps every environment and command line it can see, must find nothing.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from workflow_bench import runner
from workflow_bench.providers.scripted import ScriptedProvider, load_script

from .conftest import output_bytes, tool_results

pytestmark = pytest.mark.e2e
SCRIPT = Path(__file__).parent / "scripts" / "key-hunt.yaml"


def test_planted_keys_never_reach_output(task_file_for, tmp_path, monkeypatch, bwrap_bin, claude_bin):
    host_key = "sk-ant-planted-host-environment-0123456789"
    monkeypatch.setenv("ANTHROPIC_API_KEY", host_key)  # the runner's own environment is bait too
    tasks = task_file_for("trivial-amount-grouping")
    out = tmp_path / "out"
    with ScriptedProvider(load_script(SCRIPT)) as provider:
        model_key = provider.mint_key(task="trivial-amount-grouping", arm="baseline", run=0)
        code = runner.main(
            ["--tasks", str(tasks), "--arms", "baseline", "--model", "scripted-keyhunt",
             "--base-url", provider.base_url, "--anthropic-api-key", model_key, "--out", str(out)]
        )  # fmt: skip
        served = provider.ledger(model_key)
    row = json.loads((out / "results.jsonl").read_text())
    assert row["ok"] is True, row["error_detail"]
    assert len(served) == 2 and all(entry.status == 200 for entry in served)  # the relay injected the key
    seen = tool_results(b"".join((out / t["path"]).read_bytes() for t in row["transcript_artifacts"]))
    assert "HUNT-DONE" in seen
    # The CLI's own environment (which holds only the surrogate) is out of the tools' reach too:
    # confined tool processes cannot open /proc/<cli>/environ (sandbox/_confine.py).
    assert "wfbench-surrogate-not-a-credential" not in seen
    assert "[REDACTED]" not in seen, "a credential reached the agent (redacted before it reached disk)"
    data = output_bytes(out)
    assert model_key.encode() not in data and host_key.encode() not in data
    assert code == 0
