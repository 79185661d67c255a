"""A provider that resets the first connection of a turn costs no cell: the relay retries it once.

Through runner.main(): the real CLI in real bwrap, the real relay, the scripted provider, whose
``reset`` fault reads a request and drops its connection with a TCP reset (nothing answered,
nothing served). The CLI gets no retries of its own (``--max-retries 0``), so only the relay's
retry can save the cell; with that retry switched off (the negative control) the same script is a
``session-error`` naming the reset.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.builders import results
from workflow_bench import runner
from workflow_bench.relay import server as relay_server
from workflow_bench.usage import USAGE_FIELDS

from .conftest import REPO_ROOT

pytestmark = pytest.mark.e2e
DEMO_SCRIPT = REPO_ROOT / "workflow_bench" / "corpus" / "scripts" / "demo.yaml"
TASK = "trivial-amount-grouping"


def _resetting_script(path: Path) -> tuple[Path, dict[str, int]]:
    """The demo's resolving baseline cell, its second turn's first connection reset; and its usage."""
    demo = yaml.safe_load(DEMO_SCRIPT.read_text())
    cell = next(
        c for c in demo["cells"] if c["match"] == {"task": TASK, "arm": ["baseline", "baseline_nomcp"]}
    )
    turns = cell["sessions"][0]["turns"]
    turns[1]["fault"] = {"reset": True, "times": 1}
    script = {"schema_version": 1, "model": demo["model"], "cells": [{"match": {"task": TASK}, **cell}]}
    script["cells"][0]["match"] = {"task": TASK}
    path.write_text(yaml.safe_dump(script, sort_keys=False))
    declared = {name: sum(turn["usage"][name] for turn in turns) for name in USAGE_FIELDS}
    return path, declared


def _sweep(tmp_path: Path, task_file_for, name: str):
    script, declared = _resetting_script(tmp_path / f"{name}.yaml")
    out = tmp_path / name
    argv = ["--tasks", str(task_file_for(TASK)), "--provider", "scripted", "--script", str(script)]
    runner.main([*argv, "--arms", "baseline", "--max-retries", "0", "--out", str(out)])
    (row,) = results(out)
    return row, declared


def test_a_reset_first_connection_is_retried_and_the_cell_resolves(
    tmp_path, task_file_for, bwrap_bin, claude_bin
):
    row, declared = _sweep(tmp_path, task_file_for, "retried")
    assert row.error_kind is None and row.resolved, row.error_detail
    assert row.relay_upstream_retries == 1  # the row records the retry
    # The reset attempt served nothing: no token of it is counted, on either side of the record.
    assert row.usage_provider is not None and row.usage_provider.model_dump() == declared
    assert row.usage_wire is not None and row.usage_wire.model_dump() == declared


def test_negative_control_without_the_relays_retry_the_reset_costs_the_cell(
    tmp_path, task_file_for, bwrap_bin, claude_bin, monkeypatch
):
    monkeypatch.setattr(relay_server, "UPSTREAM_ATTEMPTS", 1)
    row, _ = _sweep(tmp_path, task_file_for, "not-retried")
    assert row.error_kind == "session-error", row.error_detail
    assert isinstance(row.error_detail, dict)
    assert "upstream reset before any response byte" in row.error_detail["attribution"]
    assert row.relay_upstream_retries == 0
