"""The gateway end to end: runner → real CLI in bwrap → real LiteLLM proxy → scripted Responses API.

Nothing of ours is stubbed: ``--via-gateway`` starts the pinned LiteLLM proxy under its
supervisor, every cell gets its own gateway key, and the rows' ``usage_provider`` comes from the
proxy's callback log, normalized with the provider's own arithmetic. The scripted provider's
ledger (``provider-ledger.jsonl``) is the ground truth it is checked against.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.builders import result_dicts
from workflow_bench import runner
from workflow_bench.usage import sum_usage

from .conftest import DEMO_TASKS, REPO_ROOT, output_bytes

pytestmark = pytest.mark.e2e
SCRIPTS = Path(__file__).parent / "scripts"
GATEWAY_LINE = re.compile(r"LiteLLM gateway on http://127\.0\.0\.1:(\d+)")


def _rows(out: Path) -> list[dict]:
    return result_dicts(out)


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _proxy_pids(port: str) -> list[int]:
    """Processes whose argv serves ``--port <port>`` (the supervisor and the proxy)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if any(b"litellm" in a for a in argv) and b"--port" in argv and port.encode() in argv:
            pids.append(int(entry.name))
    return pids


def _ledger_sum(ledger: list[dict], row: dict) -> dict:
    mine = [e for e in ledger if (e["task"], e["arm"], e["run"]) == (row["task"], row["arm"], row["run"])]
    return sum_usage([e["usage"] for e in mine if e["completed"]])


def test_provider_native_accounting_through_the_proxy(
    task_file_for, tmp_path, bwrap_bin, claude_bin, litellm_bin, capsys
):
    out = tmp_path / "out"
    code = runner.main(
        [
            "--tasks",
            str(task_file_for("trivial-amount-grouping")),
            "--provider",
            "scripted",
            "--via-gateway",
            "--script",
            str(SCRIPTS / "gateway.yaml"),
            "--arms",
            "workflow",
            "workflow_direct",
            "baseline",
            "--max-retries",
            "1",
            "--out",
            str(out),
        ]
    )
    printed = capsys.readouterr().out
    rows = {r["arm"]: r for r in _rows(out)}
    assert code == 1  # the 529 arm has no usable measurement

    # 48k prompt tokens of which 44k cached read back as 4k ordinary + 44k cached.
    baseline = rows["baseline"]
    assert baseline["usage_provider_source"] == "litellm-gateway"
    assert baseline["usage_provider"] == {
        "input_tokens": 4000,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 44000,
        "output_tokens": 20,
    }
    assert baseline["usage_main_loop"] == baseline["usage_provider"]

    # Omitted cache fields stay unknown on the provider side (and so does the ordinary part of
    # the prompt), while the CLI, fed LiteLLM's zero-filled reply, reports 0: a false zero.
    direct = rows["workflow_direct"]
    assert direct["usage_provider"] == {
        "input_tokens": None,
        "cache_creation_input_tokens": None,
        "cache_read_input_tokens": None,
        "output_tokens": 15,
    }
    assert direct["usage_main_loop"]["cache_read_input_tokens"] == 0
    # Through LiteLLM every message_start is all zeros: the stream carries no usable usage.
    assert set(direct["usage_transcripts"].values()) == {None}

    # A 529 upstream is a failed session, and the gateway logged every failure.
    workflow = rows["workflow"]
    assert workflow["error_kind"] == "session-error" and workflow["ok"] is False
    failures = [line for line in _lines(out / "gateway-usage.jsonl") if line["arm"] == "workflow"]
    assert failures and all(line["event"] in ("request", "failure") for line in failures)
    assert {line["error"]["status_code"] for line in failures if line["event"] == "failure"} == {529}
    assert all(line["usage"] is None for line in failures if line["event"] == "failure")
    ledger = _lines(out / "provider-ledger.jsonl")
    assert {e["status"] for e in ledger if e["arm"] == "workflow"} == {529}
    assert {e["dialect"] for e in ledger} == {"openai-responses"}

    # Per-cell attribution: each row's provider figure is exactly its own ledger lines.
    for row in rows.values():
        if row["arm"] != "workflow_direct":  # its ledger declares what the provider cannot split
            assert row["usage_provider"] == _ledger_sum(ledger, row), row["arm"]

    assert "## Token accounting" in (out / "report.md").read_text()
    blob = output_bytes(out)
    assert b"sk-scripted-" not in blob and b"sk-wfbench-" not in blob
    port = GATEWAY_LINE.search(printed).group(1)
    assert _proxy_pids(port) == []  # the proxy stopped with the sweep


def test_demo_via_gateway_provider_usage_equals_the_ledger(tmp_path, bwrap_bin, claude_bin, litellm_bin):
    out = tmp_path / "out"
    code = runner.main(
        [
            "--tasks",
            str(DEMO_TASKS),
            "--runs",
            "1",
            "--provider",
            "scripted",
            "--via-gateway",
            "--out",
            str(out),
        ]
    )
    assert code == 0
    rows = _rows(out)
    ledger = _lines(out / "provider-ledger.jsonl")
    assert len(rows) == 9 and ledger
    for row in rows:
        assert row["usage_provider_source"] == "litellm-gateway"
        assert row["usage_provider"] == _ledger_sum(ledger, row), (row["task"], row["arm"])
        assert None not in row["usage_provider"].values()
        # The demo declares every field, so the main loop agrees too (no subagents).
        assert row["usage_main_loop"] == row["usage_provider"]
    assert sum(r["resolved"] for r in rows) >= 1


def test_the_proxy_dies_with_a_sigkilled_runner(task_file_for, tmp_path, bwrap_bin, claude_bin, litellm_bin):
    out = tmp_path / "out"
    argv = [
        sys.executable,
        "-m",
        "workflow_bench.runner",
        "--tasks",
        str(task_file_for("trivial-amount-grouping")),
        "--provider",
        "scripted",
        "--via-gateway",
        "--script",
        str(SCRIPTS / "slow.yaml"),
        "--arms",
        "baseline",
        "--runs",
        "3",
        "--out",
        str(out),
    ]
    proc = subprocess.Popen(
        argv,
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    port, seen = None, []
    deadline = time.monotonic() + 240
    try:
        while port is None and time.monotonic() < deadline:
            line = proc.stdout.readline().decode()
            if not line:
                break
            seen.append(line)
            found = GATEWAY_LINE.search(line)
            port = found.group(1) if found else None
        assert port, "".join(seen)[-3000:]
        pids = _proxy_pids(port)
        assert len(pids) >= 2, pids  # the supervisor and the proxy it started
    finally:
        proc.kill()  # SIGKILL: no handler, no cleanup code of ours runs
        proc.wait(timeout=30)
    deadline = time.monotonic() + 30
    while _proxy_pids(port) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _proxy_pids(port) == []
    assert -proc.returncode == signal.SIGKILL


def test_a_gateway_that_is_not_ready_in_time_stops_the_sweep_before_any_cell(
    task_file_for, tmp_path, private_tmpdir, bwrap_bin, claude_bin, litellm_bin, monkeypatch, capsys
):
    monkeypatch.setenv("WORKFLOW_BENCH_GATEWAY_READY_TIMEOUT_S", "0.5")
    # The gateway's own dir (on its supervisor's command line) lands in this test's private temp
    # dir, so the check below sees only this test's supervisors, not other sweeps on the machine.
    # The fixture's path is short: a long TMPDIR is refused (cell sockets) before the gateway starts.
    private_tmp = private_tmpdir
    out = tmp_path / "out"
    tasks = str(task_file_for("trivial-amount-grouping"))
    argv = [
        "--tasks",
        tasks,
        "--provider",
        "scripted",
        "--via-gateway",
        "--arms",
        "baseline",
        "--out",
        str(out),
    ]
    code = runner.main(argv)
    err = capsys.readouterr().err
    assert code == runner.EXIT_USAGE
    assert "the LiteLLM proxy was not ready within 0 s" in err
    assert not out.exists()  # nothing ran, nothing was left behind
    assert _supervisors(private_tmp) == []  # the half-started proxy was torn down


def _supervisors(under: Path) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if (
                entry.name.isdigit()
                and b"workflow_bench.providers.gateway._supervisor"
                in (cmdline := (entry / "cmdline").read_bytes())
                and str(under).encode() in cmdline
            ):
                found.append(int(entry.name))
        except OSError:
            continue
    return found
