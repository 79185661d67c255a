"""Shared test builders: rows, output directories, hand-built sweeps, wire exchanges, canary evidence.

One place for what several test modules need (no test module imports another's helper):

- rows: ``row(**fields)``, a clean, valid ``Row`` (resolved, every usage figure known), any field
  by its model name (``task_class``, not ``class``), validated like a row the harness writes;
  ``rows_text(rows)``, the results.jsonl text of rows, spelled as the output directory spells it;
- output directories: ``results(out)`` / ``result_dicts(out)``, the rows a sweep stored, as
  ``Row`` or as stored JSON; ``jsonl(path)``, any JSON-lines file as objects (``[]`` when absent);
  ``agent_sweep``, a sweep of the oracle or no-op sanity agent over a task file;
- task files: ``task_entry(**overrides)`` (one valid task mapping), ``write_tasks``, ``make_spec``
  (a valid ``TaskSpec`` in memory), ``git_in`` (git in a fixture repository); the ``corpus``
  fixture is in tests/unit/conftest.py;
- hand-built sweeps (gate, verify, apply, report tests): ``sweep_row``/``sweep_runs``,
  ``sweep_record``, ``make_toolkit``/``overlay_for`` and ``write_sweep``, which goes through the
  same ``render_reports`` the sweep driver uses, so a directory built here is exactly what a real
  sweep with these rows would have written;
- session transcripts: ``tool_results_by_name`` (tool → (is_error, text)), ``init_event``,
  ``REFUSED`` (the CLI's words for a tool it does not offer);
- wire exchanges (evidence tests): ``wire_exchange``/``wire_reply``/``wire_record``, an honest
  two-request session (``honest_exchanges``), its stream (``stream_events``) and
  ``session_outcome``; SSE and HTTP framing (``sse``, ``sse_message``, ``http_response``);
- canary evidence: ``PLANT`` and ``CLEAN_EVIDENCE`` (every boundary held);
- ``missing_tool(what)``: a missing tool skips, and fails under WORKFLOW_BENCH_REQUIRE_SANDBOX=1;
- ``CHROMIUM_ARGS``: the flags every headless Chromium of the tests runs with (no network).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml

from workflow_bench.canary.attacks import Plant
from workflow_bench.cells.sessions import SessionOutcome
from workflow_bench.digests import canonical_digest
from workflow_bench.promotion.document import sweep_promotion
from workflow_bench.promotion.policy import PromotionPolicy
from workflow_bench.relay.server import Exchange, WireRecord
from workflow_bench.relay.wire import parse_request, parse_response
from workflow_bench.report.render import render_reports
from workflow_bench.reports.overlay_model import CANDIDATE_ORIGIN, OverlayRecord
from workflow_bench.reports.sweep_record import SWEEP_RECORD_FILE, SweepRecord, overlay_record
from workflow_bench.rows.migrate import read_rows, stored_line
from workflow_bench.rows.model import SCHEMA_VERSION, ResourceLimits, Row
from workflow_bench.taskspec.spec import OracleFileSpec, OracleSpec, TaskSpec

RECORDED_AT = "2026-11-30T11:00:00+00:00"
CLEAN: dict[str, Any] = {
    "schema_version": SCHEMA_VERSION,
    "task": "t1",
    "task_class": "bugfix",
    "task_impossible": False,
    "arm": "workflow",
    "run": 0,
    "recorded_at": RECORDED_AT,
    "ok": True,
    "resolved": True,
    "error_kind": None,
    "input_tokens": 100,
    "cache_creation_input_tokens": 10,
    "cache_read_input_tokens": 1000,
    "output_tokens": 50,
    "cost_usd": 1.0,
    "duration_s": 30.0,
    "num_turns": 4,
    "diff_files": 2,
    "diff_insertions": 10,
    "diff_deletions": 1,
    "authored_tests_passed": True,
    "oracle_passed": True,
    "skill_invoked": True,
    "transcript_missing": False,
    "reused": False,
}


def row(**fields: Any) -> Row:
    """A clean row with ``fields`` changed (model field names); invalid values raise, as in the harness."""
    return Row.model_validate({**CLEAN, **fields})


def rows_text(rows: Iterable[Row]) -> str:
    return "".join(stored_line(r) for r in rows)


def usage(
    input_tokens: int | None, cache_creation: int | None, cache_read: int | None, output: int | None
) -> dict[str, int | None]:
    """One usage figure (``usage_main_loop``, ``usage_wire``, …) as a row holds it."""
    return {
        "input_tokens": input_tokens,
        "cache_creation_input_tokens": cache_creation,
        "cache_read_input_tokens": cache_read,
        "output_tokens": output,
    }


def resource_limits(**bounds: Any) -> dict[str, Any]:
    """A row's ``resource_limits`` with ``bounds`` set; every other bound not enforced (``None``)."""
    return {**dict.fromkeys(ResourceLimits.model_fields), "sampled": [], **bounds}


def jsonl(path: Path) -> list[dict[str, Any]]:
    """Every line of a JSON-lines file as an object; ``[]`` when the file does not exist."""
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def results(out: Path) -> list[Row]:
    """The rows a sweep stored in ``out/results.jsonl``, read as every reader reads them."""
    path = out / "results.jsonl"
    return read_rows(path.read_text(encoding="utf-8"), source=str(path)) if path.exists() else []


def result_dicts(out: Path) -> list[dict[str, Any]]:
    """The stored rows of ``out`` as the JSON objects on disk (keys as stored: ``class``, …)."""
    return jsonl(out / "results.jsonl")


def as_row(stored: dict[str, Any]) -> Row:
    """A stored row (as ``result_dicts`` returns it) as a ``Row``."""
    return Row.model_validate(stored)


def by_cell(out: Path) -> dict[tuple[str, str], Row]:
    """``{(task, arm): row}`` of a one-run sweep in ``out``."""
    return {(r.task, r.arm): r for r in results(out)}


def agent_sweep(tasks: Path, agent: str, work: Path, *runner_args: str) -> tuple[int, list[dict[str, Any]]]:
    """The ``agent`` sanity agent (``tasks agent-script``) swept over ``tasks`` with the scripted
    provider into ``work/out-<agent>`` (default arms unless ``runner_args`` say otherwise):
    (the runner's exit code, the stored rows)."""
    from workflow_bench import runner
    from workflow_bench.tasks.__main__ import main as tasks_main

    script = work / f"{agent}.yaml"
    assert tasks_main(["agent-script", "--tasks", str(tasks), "--agent", agent, "--out", str(script)]) == 0
    out = work / f"out-{agent}"
    argv = ["--tasks", str(tasks), "--provider", "scripted", "--script", str(script), "--out", str(out)]
    code = runner.main([*argv, *runner_args])
    return code, result_dicts(out)


# ── task files ──────────────────────────────────────────────────────────────


ORACLE_SOURCE = "oracles/t1.oracle_test.py"


ORACLE_BYTES = b"import unittest\n\nclass T(unittest.TestCase):\n    def test_ok(self):\n        pass\n"


def git_in(repo: Path, *args: str) -> str:
    """Plain git in a fixture repository (a test's own setup, not the harness's hardened git)."""
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(repo),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.invalid",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.invalid",
    }
    done = subprocess.run(
        ["git", "-C", str(repo), *args], env=env, check=True, capture_output=True, text=True
    )
    return done.stdout.strip()


def task_entry(**overrides: object) -> dict[str, object]:
    base: dict[str, object] = {
        "id": "t1",
        "class": "trivial",
        "repo": "repo",
        "prompt": "Fix the thing.",
        "verify": "python3 -m unittest -q",
        "oracle": {
            "command": 'python3 "$WORKFLOW_BENCH_ORACLE_ROOT/t1_oracle_test.py"',
            "files": [{"source": ORACLE_SOURCE, "target": "t1_oracle_test.py"}],
        },
    }
    base.update(overrides)
    return {k: v for k, v in base.items() if v is not None}


def write_tasks(corpus: Path, *tasks: dict[str, object], name: str = "tasks.yaml") -> Path:
    path = corpus / name
    path.write_text(yaml.safe_dump({"tasks": list(tasks)}, sort_keys=False))
    return path


def make_spec(**overrides: object) -> TaskSpec:
    """A valid spec (not loaded from a file) with ``overrides`` (model field names)."""
    fields: dict[str, object] = {
        "source_file": Path("/corpus/tasks.yaml"),
        "task_id": "t1",
        "task_class": "trivial",
        "repo": "repo",
        "prompt": "Fix it.",
        "verify": "true",
        "oracle": OracleSpec(command="c", files=(OracleFileSpec(source="o.py", target="o.py"),)),
    }
    fields.update(overrides)
    return TaskSpec(**fields)  # type: ignore[arg-type]


# ── hand-built sweeps ───────────────────────────────────────────────────────


SWEEP_MODEL = "scripted-demo"


SWEEP_FINISHED = "2026-11-30T12:00:00+00:00"


def sweep_row(task: str = "t1", arm: str = "workflow", run: int = 0, **overrides: Any) -> Row:
    """A clean row of ``task``×``arm`` (``tests.builders.row``) recorded with this sweep's model."""
    return row(task=task, arm=arm, run=run, **{"model": SWEEP_MODEL, "reused": None, **overrides})


def sweep_runs(n: int, task: str, arm: str, **overrides: Any) -> list[Row]:
    return [sweep_row(task, arm, r, **overrides) for r in range(n)]


def task_binding(task: str) -> dict[str, Any]:
    return {"id": task, "class": "bugfix", "oracle_digest": hashlib.sha256(task.encode()).hexdigest()}


def sweep_record(
    *,
    arms: Sequence[str] = ("workflow", "candidate_workflow"),
    tasks: Sequence[str] = ("t1",),
    status: str = "complete",
    policy: PromotionPolicy | None = None,
    overlay: OverlayRecord | None = None,
    runs_per_cell: int = 3,
    finished_at: str = SWEEP_FINISHED,
) -> SweepRecord:
    candidates = any(a.startswith("candidate_") for a in arms)
    return SweepRecord(
        model=SWEEP_MODEL,
        effort=None,
        provider="scripted",
        claude_code_version="2.1.332",
        runs=runs_per_cell,
        arms=tuple(arms),
        tasks=tuple(task_binding(t) for t in tasks),
        skipped_expensive=(),
        started_at="2026-11-30T11:00:00+00:00",
        policy=(policy or PromotionPolicy()).to_json() if candidates else None,
        overlay=overlay,
        status=status,
        finished_at=finished_at,
        wall_s=3600.0,
    )


OVERLAY_FILES = (
    ("skills/plan/SKILL.md", b"# plan v2\ncandidate plan prose\n"),
    ("skills/work/SKILL.md", b"# work v2\ncandidate work prose\n"),
)


def make_toolkit(root: Path) -> Path:
    for relative, _ in OVERLAY_FILES:
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_bytes(f"# incumbent {relative}\n".encode())
    (root / "skills" / "review").mkdir(parents=True, exist_ok=True)
    (root / "skills" / "review" / "SKILL.md").write_bytes(b"# review\n")
    return root


def overlay_for(toolkit: Path, *, origin: str = CANDIDATE_ORIGIN) -> OverlayRecord:
    digest = canonical_digest([[p, hashlib.sha256(d).hexdigest(), len(d)] for p, d in OVERLAY_FILES])
    return overlay_record(
        digest=digest, files=OVERLAY_FILES, roles=["plan", "work"], toolkit_root=toolkit, origin=origin
    )


def write_sweep(out: Path, rec: SweepRecord, rows: Sequence[Row]) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.jsonl").write_text(rows_text(rows), encoding="utf-8")
    (out / SWEEP_RECORD_FILE).write_text(rec.to_text(), encoding="utf-8")
    if rec.overlay is not None:
        for relative, data in OVERLAY_FILES:
            (out / "candidate-overlay" / relative).parent.mkdir(parents=True, exist_ok=True)
            (out / "candidate-overlay" / relative).write_bytes(data)
    results = (out / "results.jsonl").read_text()
    for name, text in render_reports(rec, results, promotion=sweep_promotion(rec, results)).files.items():
        (out / name).write_text(text, encoding="utf-8")
    return out


# ── session transcripts ─────────────────────────────────────────────────────


REFUSED = "<tool_use_error>Error: No such tool available: {}</tool_use_error>"  # CLI 2.1.332


def tool_results_by_name(transcript: Path) -> dict[str, tuple[bool, str]]:
    """tool name → (is_error, result text) from a parent-captured stream."""
    names: dict[str, str] = {}
    results: dict[str, tuple[bool, str]] = {}
    for line in transcript.read_text().splitlines():
        event: dict[str, Any] = json.loads(line)
        message = event.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        for block in content if isinstance(content, list) else []:
            if block.get("type") == "tool_use":
                names[block["id"]] = block["name"]
            elif block.get("type") == "tool_result":
                text = block.get("content")
                if isinstance(text, list):
                    text = " ".join(str(part.get("text", "")) for part in text)
                results[names[block["tool_use_id"]]] = (bool(block.get("is_error")), str(text))
    return results


def init_event(transcript: Path) -> dict[str, Any]:
    for line in transcript.read_text().splitlines():
        event = json.loads(line)
        if event.get("type") == "system" and event.get("subtype") == "init":
            return event
    raise AssertionError("no init event")


# ── wire exchanges and session streams ──────────────────────────────────────


def wire_usage(n: int) -> dict:
    return {
        "input_tokens": n,
        "output_tokens": 1,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
    }


def wire_reply(msg_id: str, content: list, n: int) -> bytes:
    body = json.dumps({"id": msg_id, "type": "message", "content": content, "usage": wire_usage(n)}).encode()
    return b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n" + body


def wire_exchange(index, messages, reply, *, agent_id=None, delivered=False) -> Exchange:
    request = parse_request(json.dumps({"model": "m", "messages": messages}).encode())
    return Exchange(index, agent_id, request, parse_response(reply), False, delivered)


SKILL_CALL = [
    {"type": "text", "text": "using it"},
    {"type": "tool_use", "id": "t1", "name": "Skill", "input": {"skill": "work"}},
]


USER = {"role": "user", "content": "the task"}


def tool_result_message(tool_id, *, error=False):
    return {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": tool_id, "content": "x", "is_error": error}],
    }


def honest_exchanges(error=False) -> list[Exchange]:
    first = wire_exchange(0, [USER], wire_reply("m1", SKILL_CALL, 10))
    second = wire_exchange(
        1,
        [USER, {"role": "assistant", "content": SKILL_CALL}, tool_result_message("t1", error=error)],
        wire_reply("m2", [{"type": "text", "text": "done"}], 20),
    )
    return [first, second]


def wire_record(exchanges, refused=0) -> WireRecord:
    return WireRecord(tuple(exchanges), refused, (), False)


def stream_events(*, usage=None, extra=()) -> list[dict]:
    events = [
        {"type": "system", "subtype": "init"},
        {"type": "assistant", "message": {"id": "m1", "content": SKILL_CALL}},
        {
            "type": "user",
            "message": {"content": [{"type": "tool_result", "tool_use_id": "t1", "content": "x"}]},
        },
        {"type": "assistant", "message": {"id": "m2", "content": [{"type": "text", "text": "done"}]}},
        *extra,
        {"type": "result", "is_error": False, "usage": usage or {**wire_usage(30), "output_tokens": 2}},
    ]
    return events


def session_outcome(events, *, error_kind=None) -> SessionOutcome:
    return SessionOutcome(
        ok=error_kind is None,
        error_kind=error_kind,
        error_detail=None,
        usage=events[-1]["usage"],
        cost_usd=0.1,
        duration_s=1.0,
        num_turns=2,
        session_id="s",
        skill_invoked=True,
        transcript_missing=False,
        tool_use_counts={},
        transcript=b"",
        events=tuple(events),
        stream_usage=events[-1]["usage"],
    )


# ── SSE and HTTP framing ────────────────────────────────────────────────────


SSE_USAGE = {
    "input_tokens": 10,
    "output_tokens": 1,
    "cache_creation_input_tokens": 2,
    "cache_read_input_tokens": 3,
}


def sse(*events: dict) -> bytes:
    return b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events)


def sse_message(*, msg_id="msg_1", final_output=7, tool_input='{"skill": "work"}', stop=True) -> list[dict]:
    events = [
        {"type": "message_start", "message": {"id": msg_id, "type": "message", "usage": dict(SSE_USAGE)}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hel"}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "lo"}},
        {"type": "content_block_stop", "index": 0},
        {
            "type": "content_block_start",
            "index": 1,
            "content_block": {"type": "tool_use", "id": "toolu_1", "name": "Skill", "input": {}},
        },
        {
            "type": "content_block_delta",
            "index": 1,
            "delta": {"type": "input_json_delta", "partial_json": tool_input[:5]},
        },
        {
            "type": "content_block_delta",
            "index": 1,
            "delta": {"type": "input_json_delta", "partial_json": tool_input[5:]},
        },
        {"type": "content_block_stop", "index": 1},
        {
            "type": "message_delta",
            "delta": {"stop_reason": "tool_use"},
            "usage": {"output_tokens": final_output},
        },
    ]
    if stop:
        events.append({"type": "message_stop"})
    return events


def http_response(
    body: bytes, *, content_type="text/event-stream", chunked=False, length=True, status=200
) -> bytes:
    head = f"HTTP/1.1 {status} OK\r\nContent-Type: {content_type}\r\n"
    if chunked:
        pieces = [body[i : i + 50] for i in range(0, len(body), 50)]
        encoded = b"".join(f"{len(p):x}\r\n".encode() + p + b"\r\n" for p in pieces) + b"0\r\n\r\n"
        return (head + "Transfer-Encoding: chunked\r\n\r\n").encode() + encoded
    if length:
        head += f"Content-Length: {len(body)}\r\n"
    return (head + "\r\n").encode() + body


# ── canary evidence ─────────────────────────────────────────────────────────


PLANT = Plant(
    secret_dir=Path("/tmp/s"),
    secret_file=Path("/tmp/s/secret.txt"),
    secret_token="CANARY-HOST-SECRET-1",
    home_file=Path("/root/.h"),
    home_token="CANARY-HOME-SECRET-1",
    host_key="sk-ant-canary-0000",
    listener_port=1234,
    sentinel_pid=4242,
    sentinel_name="wfbench-host-sentinel-1",
    background_name="wfbench-canary-bg-1",
)


CLEAN_EVIDENCE = dict(
    output="No such file or directory",
    row=row(error_kind="oracle-failed", authored_tests_passed=True, oracle_passed=False),
    patch="",
    transcripts="",
    listener_hits=0,
    sentinel_alive=True,
    background_survivors=0,
    host_paths_created=(),
)


# ── missing tools ───────────────────────────────────────────────────────────

REQUIRE = os.environ.get("WORKFLOW_BENCH_REQUIRE_SANDBOX") == "1"


def missing_tool(what: str) -> None:
    if REQUIRE:
        pytest.fail(f"{what} is required (WORKFLOW_BENCH_REQUIRE_SANDBOX=1) but unavailable")
    pytest.skip(f"{what} unavailable")


# Headless Chromium for the pages' tests (Debian's chromium as root needs --no-sandbox); every
# flag that could reach the network is off and the proxy is a dead port: a page that needed the
# network would fail. Playwright (dev extra) drives it; no browser is ever downloaded.
CHROMIUM_ARGS = (
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-default-apps",
    "--disable-extensions",
    "--no-first-run",
    "--mute-audio",
    "--proxy-server=127.0.0.1:9",
)
