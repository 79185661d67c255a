"""The scripted provider against the real, pinned Claude Code CLI (no sandbox), plus raw HTTP checks.

Each CLI test mints its own key, runs ``claude -p --output-format stream-json`` once or twice in a
fresh git workspace with a fresh HOME, and checks both sides: what the CLI did and reported (files,
tool_result events, the final ``result`` event) and what the provider's ledger says it served.
"""

from __future__ import annotations

import http.client
import json
import os
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from workflow_bench.providers.scripted import EXHAUSTED_TEXT, ScriptedProvider, load_script, unscripted_text

pytestmark = pytest.mark.component

DEFAULT_CLAUDE_BIN = Path.home() / (
    ".cache/workflow-bench/claude-code-2.1.332/node_modules/@anthropic-ai/claude-code/bin/claude.exe"
)
ALLOWED_TOOLS = "Read,Write,Edit,Bash,Skill,Glob,Grep"
# One CLI run is ~0.5 s; a faulted one ~1 s (one 0.5 s retry back-off with MAX_RETRIES=1).
# 60 s only catches a hang (an unbounded retry loop costs ~3 min).
CLI_TIMEOUT_S = 60

SCRIPT = """
schema_version: 1
model: scripted-demo
cells:
  - match: {task: write}
    sessions:
      - turns:
          - text: "Writing the module."
            tool_calls:
              - name: Write
                input:
                  file_path: "{cwd}/src/app.py"
                  content: "TABLE = {'a': {1: 2}}\\nprint(f'{TABLE}')\\n"
            usage:
              input_tokens: 1200
              output_tokens: 80
              cache_creation_input_tokens: 300
              cache_read_input_tokens: 3000
          - text: "Done."
            usage: {input_tokens: 1500, output_tokens: 25, cache_read_input_tokens: 4100}
  - match: {task: skill}
    sessions:
      - turns:
          - text: "I'll use the plan skill."
            tool_calls: [{name: Skill, input: {skill: plan}}]
          - text: "Skill loaded."
  - match: {task: skill-missing}
    sessions:
      - turns:
          - tool_calls: [{name: Skill, input: {skill: no-such-skill}}]
          - text: "No skill."
  - match: {task: bash}
    sessions:
      - turns:
          - tool_calls:
              - {name: Bash, input: {command: "printf 'bash-says-%s\\n' hello; pwd", description: probe}}
          - text: "Ran it."
  - match: {task: two-sessions}
    sessions:
      - turns: [{text: "plan session"}]
      - turns: [{text: "work session"}]
  - match: {task: overloaded}
    sessions:
      - turns: [{text: "never served", fault: {http_status: 529}}]
  - match: {task: overloaded-once}
    sessions:
      - turns:
          - text: "served on retry"
            usage: {input_tokens: 9, output_tokens: 1}
            fault: {http_status: 529, times: 1}
  - match: {task: cut}
    sessions:
      - turns: [{text: "this reply is cut after three events", fault: {cut_after_events: 3}}]
  - match: {task: attr-*, arm: workflow}
    sessions:
      - turns: [{text: "workflow cell", usage: {input_tokens: 11, output_tokens: 1}}]
  - match: {task: attr-*}
    sessions:
      - turns: [{text: "other arm", usage: {input_tokens: 22, output_tokens: 2}}]
  - match: {task: short}
    sessions:
      - turns:
          - tool_calls: [{name: Bash, input: {command: "true", description: noop}}]
"""


def claude_bin() -> Path:
    path = Path(os.environ.get("WORKFLOW_BENCH_CLAUDE_BIN") or DEFAULT_CLAUDE_BIN)
    if not os.access(path, os.X_OK):
        message = f"pinned Claude Code CLI not found at {path}; run ./dev setup"
        if os.environ.get("WORKFLOW_BENCH_REQUIRE_SANDBOX") == "1":
            pytest.fail(message)
        pytest.skip(message)
    return path


@pytest.fixture(scope="module")
def provider(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ScriptedProvider]:
    path = tmp_path_factory.mktemp("script") / "component.script.yaml"
    path.write_text(SCRIPT)
    with ScriptedProvider(load_script(path)) as running:
        yield running


@dataclass(frozen=True)
class CliRun:
    returncode: int
    events: list[dict[str, Any]]
    stderr: str
    wall_s: float

    @property
    def result(self) -> dict[str, Any]:
        results = [e for e in self.events if e["type"] == "result"]
        assert len(results) == 1, f"want one result event, got {len(results)}; stderr={self.stderr!r}"
        return results[0]

    def tool_results(self) -> list[dict[str, Any]]:
        return [
            block
            for e in self.events
            if e["type"] == "user" and isinstance(e["message"].get("content"), list)
            for block in e["message"]["content"]
            if block.get("type") == "tool_result"
        ]

    def tool_uses(self) -> list[dict[str, Any]]:
        return [
            block
            for e in self.events
            if e["type"] == "assistant"
            for block in e["message"]["content"]
            if block.get("type") == "tool_use"
        ]


@dataclass(frozen=True)
class Workspace:
    path: Path
    home: Path


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    path, home = tmp_path / "ws", tmp_path / "home"
    path.mkdir()
    home.mkdir()
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    return Workspace(path=path, home=home)


def run_cli(provider: ScriptedProvider, key: str, ws: Workspace, prompt: str = "Do the task.") -> CliRun:
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(ws.home),
        "ANTHROPIC_BASE_URL": provider.base_url,
        "ANTHROPIC_API_KEY": key,
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
        "CLAUDE_CODE_MAX_RETRIES": "1",
    }
    argv = [
        str(claude_bin()),
        "-p",
        "--output-format",
        "stream-json",
        "--verbose",
        "--model",
        "scripted-demo",
        "--permission-mode",
        "dontAsk",
        f"--allowedTools={ALLOWED_TOOLS}",
    ]
    started = time.monotonic()
    done = subprocess.run(
        argv, input=prompt, env=env, cwd=ws.path, capture_output=True, text=True, timeout=CLI_TIMEOUT_S
    )
    events = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    return CliRun(done.returncode, events, done.stderr, time.monotonic() - started)


# ---- the real CLI


def test_write_creates_the_file_and_result_usage_is_the_sum_of_declared_turns(
    provider: ScriptedProvider, ws: Workspace
) -> None:
    key = provider.mint_key(task="write", arm="baseline", run=0)
    run = run_cli(provider, key, ws)
    written = ws.path / "src" / "app.py"
    # Braces other than {cwd} survive: the script writes Python source.
    assert written.read_text() == "TABLE = {'a': {1: 2}}\nprint(f'{TABLE}')\n"
    (use,) = run.tool_uses()
    assert use["name"] == "Write" and use["input"]["file_path"] == str(written)
    (tool_result,) = run.tool_results()
    assert tool_result["tool_use_id"] == use["id"] and tool_result.get("is_error") is not True
    result = run.result
    assert run.returncode == 0 and result["is_error"] is False and result["terminal_reason"] == "completed"
    assert result["num_turns"] == 2 and result["result"] == "Done."
    # Observed with CLI 2.1.332: result.usage is the per-field SUM over every served turn;
    # a field a turn leaves undeclared (0 on the wire) adds nothing.
    assert {k: result["usage"][k] for k in ("input_tokens", "output_tokens")} == {
        "input_tokens": 1200 + 1500,
        "output_tokens": 80 + 25,
    }
    assert result["usage"]["cache_creation_input_tokens"] == 300
    assert result["usage"]["cache_read_input_tokens"] == 3000 + 4100
    ledger = provider.ledger(key)
    assert [(e.session_index, e.turn, e.status, e.tool_calls) for e in ledger] == [
        (0, 0, 200, ("Write",)),
        (0, 1, 200, ()),
    ]
    assert ledger[1].usage.cache_creation_input_tokens is None  # declared unknown, not 0
    assert sum(e.usage.input_tokens or 0 for e in ledger if e.completed) == result["usage"]["input_tokens"]
    assert all(e.session_id == result["session_id"] for e in ledger)


def test_skill_tool_call_loads_the_workspace_skill(provider: ScriptedProvider, ws: Workspace) -> None:
    skill_dir = ws.path / ".claude" / "skills" / "plan"
    skill_dir.mkdir(parents=True)
    body = "# Plan skill\nWrite the plan to docs/plans before touching code.\n"
    (skill_dir / "SKILL.md").write_text(f"---\nname: plan\ndescription: Write a plan first.\n---\n\n{body}")
    key = provider.mint_key(task="skill", arm="workflow", run=0)
    run = run_cli(provider, key, ws)
    init = next(e for e in run.events if e.get("subtype") == "init")
    assert "plan" in init["skills"]
    (use,) = run.tool_uses()
    assert use["name"] == "Skill" and use["input"] == {"skill": "plan"}
    (tool_result,) = run.tool_results()
    assert tool_result["tool_use_id"] == use["id"] and tool_result.get("is_error") is not True
    assert tool_result["content"] == "Launching skill: plan"
    carrier = next(e for e in run.events if e["type"] == "user" and e.get("tool_use_result"))
    assert carrier["tool_use_result"] == {"success": True, "commandName": "plan"}
    # The skill body is injected as a synthetic user message right after the tool_result.
    injected = [
        block["text"]
        for e in run.events
        if e["type"] == "user" and e.get("isSynthetic")
        for block in e["message"]["content"]
        if block.get("type") == "text"
    ]
    assert any(
        text.startswith(f"Base directory for this skill: {skill_dir}") and body in text for text in injected
    )
    result = run.result
    assert result["is_error"] is False and result["result"] == "Skill loaded."
    # Two model requests, but the CLI counts the injected skill message as a turn of its own.
    assert result["num_turns"] == 3
    assert [e.turn for e in provider.ledger(key)] == [0, 1]


def test_skill_tool_call_for_a_missing_skill_is_an_error_tool_result(
    provider: ScriptedProvider, ws: Workspace
) -> None:
    key = provider.mint_key(task="skill-missing", arm="workflow", run=0)
    run = run_cli(provider, key, ws)
    (use,) = run.tool_uses()
    (tool_result,) = run.tool_results()
    assert tool_result["tool_use_id"] == use["id"] and tool_result["is_error"] is True
    assert tool_result["content"] == "<tool_use_error>Unknown skill: no-such-skill</tool_use_error>"
    assert run.result["is_error"] is False and run.result["result"] == "No skill."  # the session goes on


def test_bash_output_comes_back_as_the_tool_result(provider: ScriptedProvider, ws: Workspace) -> None:
    key = provider.mint_key(task="bash", arm="baseline", run=0)
    run = run_cli(provider, key, ws)
    (use,) = run.tool_uses()
    (tool_result,) = run.tool_results()
    assert tool_result["tool_use_id"] == use["id"] and tool_result.get("is_error") is not True
    assert tool_result["content"] == f"bash-says-hello\n{ws.path}"
    assert run.result["is_error"] is False and run.result["num_turns"] == 2


def test_two_cli_sessions_with_one_key_get_session_index_0_then_1(
    provider: ScriptedProvider, ws: Workspace
) -> None:
    key = provider.mint_key(task="two-sessions", arm="workflow", run=0)
    first, second = run_cli(provider, key, ws), run_cli(provider, key, ws)
    assert (first.result["result"], second.result["result"]) == ("plan session", "work session")
    ledger = provider.ledger(key)
    assert [(e.session_index, e.turn) for e in ledger] == [(0, 0), (1, 0)]
    assert [e.session_id for e in ledger] == [first.result["session_id"], second.result["session_id"]]
    # A third session has no script left: it is answered, flagged, and does not crash the CLI.
    third = run_cli(provider, key, ws)
    assert third.result["result"] == EXHAUSTED_TEXT and third.result["is_error"] is False
    assert provider.ledger(key)[-1].exhausted and provider.ledger(key)[-1].session_index == 2


def test_overloaded_529_fails_the_session_as_api_error(provider: ScriptedProvider, ws: Workspace) -> None:
    key = provider.mint_key(task="overloaded", arm="baseline", run=0)
    run = run_cli(provider, key, ws)
    result = run.result
    assert run.returncode == 1 and result["is_error"] is True
    assert result["terminal_reason"] == "api_error" and result["api_error_status"] == 529
    assert result["result"].startswith("API Error: 529 scripted fault")
    retries = [e for e in run.events if e.get("subtype") == "api_retry"]
    assert [r["error_status"] for r in retries] == [529]  # CLAUDE_CODE_MAX_RETRIES=1
    ledger = provider.ledger(key)
    assert [(e.status, e.fault, e.completed) for e in ledger] == [(529, "http_status=529", False)] * 2


def test_529_once_is_retried_and_the_retry_is_served(provider: ScriptedProvider, ws: Workspace) -> None:
    key = provider.mint_key(task="overloaded-once", arm="baseline", run=0)
    run = run_cli(provider, key, ws)
    assert run.returncode == 0 and run.result["is_error"] is False
    assert run.result["result"] == "served on retry" and run.result["usage"]["input_tokens"] == 9
    assert [(e.turn, e.status, e.fault) for e in provider.ledger(key)] == [
        (0, 529, "http_status=529"),
        (0, 200, None),
    ]


def test_cut_stream_fails_the_session_quickly(provider: ScriptedProvider, ws: Workspace) -> None:
    key = provider.mint_key(task="cut", arm="baseline", run=0)
    run = run_cli(provider, key, ws)
    result = run.result
    assert run.returncode == 1 and result["is_error"] is True
    assert result["terminal_reason"] == "api_error" and result["api_error_status"] is None
    assert "ECONNRESET" in result["result"]
    assert run.wall_s < 15
    ledger = provider.ledger(key)
    # Stream, one streamed retry, then the CLI's non-streaming fallback: every one is cut.
    assert [e.stream for e in ledger] == [True, True, False]
    assert all(e.fault == "cut_after_events=3" and not e.completed for e in ledger)


def test_unknown_key_is_rejected_with_401_and_leaves_no_ledger(
    provider: ScriptedProvider, ws: Workspace
) -> None:
    before = len(provider.all_ledger())
    run = run_cli(provider, "sk-scripted-not-minted", ws)
    result = run.result
    assert run.returncode == 1 and result["is_error"] is True
    assert result["terminal_reason"] == "api_error" and result["api_error_status"] == 401
    assert len(provider.all_ledger()) == before
    assert provider.request_count("sk-scripted-not-minted") >= 1
    with pytest.raises(KeyError):
        provider.ledger("sk-scripted-not-minted")


def test_ledger_attributes_each_key_to_its_own_cell(provider: ScriptedProvider, ws: Workspace) -> None:
    keys = {
        ("attr-1", "workflow"): provider.mint_key(task="attr-1", arm="workflow", run=0),
        ("attr-1", "baseline"): provider.mint_key(task="attr-1", arm="baseline", run=0),
        ("attr-1", "workflow", 1): provider.mint_key(task="attr-1", arm="workflow", run=1),
        ("zzz", "baseline"): provider.mint_key(task="zzz", arm="baseline", run=0),
    }
    assert len(set(keys.values())) == 4 and all(k.startswith("sk-scripted-") for k in keys.values())
    texts = {cell: run_cli(provider, key, ws).result["result"] for cell, key in keys.items()}
    assert texts == {
        ("attr-1", "workflow"): "workflow cell",
        ("attr-1", "baseline"): "other arm",
        ("attr-1", "workflow", 1): "workflow cell",
        ("zzz", "baseline"): unscripted_text(task="zzz", arm="baseline"),
    }
    (wf,) = provider.ledger(keys["attr-1", "workflow"])
    (other,) = provider.ledger(keys["attr-1", "baseline"])
    (wf_run1,) = provider.ledger(keys["attr-1", "workflow", 1])
    (unscripted,) = provider.ledger(keys["zzz", "baseline"])
    assert (wf.task, wf.arm, wf.run, wf.usage.input_tokens) == ("attr-1", "workflow", 0, 11)
    assert (other.arm, other.usage.input_tokens) == ("baseline", 22)
    assert (wf_run1.run, wf_run1.session_index) == (1, 0)  # a new key starts its own session count
    assert unscripted.unscripted and not unscripted.exhausted and unscripted.usage.input_tokens is None
    assert all(provider.request_count(k) == 1 for k in keys.values())
    everything = provider.all_ledger()
    assert {wf, other, wf_run1, unscripted} <= set(everything)
    assert json.loads(json.dumps(wf.to_json()))["usage"] == {
        "input_tokens": 11,
        "output_tokens": 1,
        "cache_creation_input_tokens": None,
        "cache_read_input_tokens": None,
    }


def test_turn_beyond_the_script_is_answered_as_exhausted(provider: ScriptedProvider, ws: Workspace) -> None:
    key = provider.mint_key(task="short", arm="baseline", run=0)
    run = run_cli(provider, key, ws)
    assert run.result["result"] == EXHAUSTED_TEXT and run.result["is_error"] is False
    assert [(e.turn, e.exhausted) for e in provider.ledger(key)] == [(0, False), (1, True)]


# ---- raw HTTP: the routes and shapes the CLI did not exercise above


def request(
    provider: ScriptedProvider,
    method: str,
    path: str,
    body: Any = None,
    headers: dict[str, str] | None = None,
) -> tuple[int, bytes]:
    parts = urlsplit(provider.base_url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
    try:
        data = None if body is None else json.dumps(body).encode()
        conn.request(method, path, body=data, headers={"Content-Type": "application/json", **(headers or {})})
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def test_health_routes_and_404(provider: ScriptedProvider) -> None:
    assert request(provider, "HEAD", "/api/hello")[0] == 200
    assert request(provider, "GET", "/")[0] == 200
    status, body = request(provider, "GET", "/v1/models")
    assert status == 404 and json.loads(body)["error"]["type"] == "not_found_error"
    assert request(provider, "POST", "/v1/complete", {})[0] == 404


def test_count_tokens_and_bearer_auth(provider: ScriptedProvider) -> None:
    key = provider.mint_key(task="write", arm="x", run=0)
    status, body = request(
        provider, "POST", "/v1/messages/count_tokens", {"messages": []}, {"Authorization": f"Bearer {key}"}
    )
    assert status == 200 and json.loads(body)["input_tokens"] > 0
    status, body = request(
        provider, "POST", "/v1/messages/count_tokens", {"messages": []}, {"x-api-key": "nope"}
    )
    assert status == 401 and json.loads(body)["error"]["type"] == "authentication_error"
    assert provider.request_count(key) == 1 and provider.ledger(key) == ()


def test_non_streaming_reply_is_a_json_message(provider: ScriptedProvider) -> None:
    key = provider.mint_key(task="write", arm="x", run=0)
    env = "# Environment\n - Primary working directory: /srv/ws\n"
    body = {"model": "m-1", "stream": False, "messages": [{"role": "user", "content": env}]}
    status, raw = request(provider, "POST", "/v1/messages?beta=true", body, {"x-api-key": key})
    message = json.loads(raw)
    assert status == 200 and message["type"] == "message" and message["model"] == "m-1"
    assert message["stop_reason"] == "tool_use"
    text, use = message["content"]
    assert text == {"type": "text", "text": "Writing the module."}
    assert use["type"] == "tool_use" and use["id"].startswith("toolu_") and use["name"] == "Write"
    assert use["input"]["file_path"] == "/srv/ws/src/app.py"
    assert message["usage"] == {
        "input_tokens": 1200,
        "output_tokens": 80,
        "cache_creation_input_tokens": 300,
        "cache_read_input_tokens": 3000,
    }
    (entry,) = provider.ledger(key)
    assert entry.stream is False and entry.session_id is None and entry.completed


def test_scripted_cut_resets_a_non_streaming_reply(provider: ScriptedProvider) -> None:
    key = provider.mint_key(task="cut", arm="x", run=0)
    with pytest.raises((http.client.IncompleteRead, ConnectionResetError)):
        request(provider, "POST", "/v1/messages", {"stream": False, "messages": []}, {"x-api-key": key})
