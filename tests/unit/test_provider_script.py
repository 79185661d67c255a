"""Scripted-provider script loading/validation, ``{cwd}`` substitution, cell matching, wire encoding."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from workflow_bench.providers.scripted import (
    Fault,
    Match,
    Script,
    ScriptError,
    ToolCall,
    Turn,
    Usage,
    _wire,
    load_script,
    parse_script,
    substitute_cwd,
)

pytestmark = pytest.mark.unit

VALID = """
schema_version: 1
model: scripted-demo
cells:
  - match: {task: "bug-*", arm: [workflow, workflow_direct]}
    sessions:
      - turns:
          - text: "I'll use the plan skill."
            tool_calls:
              - {name: Skill, input: {skill: plan}}
            usage: {input_tokens: 1200, output_tokens: 80, cache_read_input_tokens: 3000}
          - tool_calls:
              - {name: Write, input: {file_path: "{cwd}/docs/plans/fix.md", content: "# Plan\\n"}}
            usage: {input_tokens: 5}
          - text: "Plan written."
            fault: {http_status: 529, times: 1}
  - match: {task: "bug-*"}
    sessions: []
"""


def write(tmp_path: Path, text: str, name: str = "demo.script.yaml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def test_valid_script_loads_into_frozen_tuples(tmp_path: Path) -> None:
    script = load_script(write(tmp_path, VALID))
    assert script.model == "scripted-demo" and script.source.endswith("demo.script.yaml")
    first = script.cells[0]
    assert first.match == Match(task=("bug-*",), arm=("workflow", "workflow_direct"))
    turns = first.sessions[0].turns
    assert isinstance(turns, tuple) and len(turns) == 3
    assert turns[0].tool_calls == (ToolCall(name="Skill", input={"skill": "plan"}),)
    assert turns[0].stop_reason == "tool_use" and turns[2].stop_reason == "end_turn"
    assert turns[1].usage == Usage(input_tokens=5)  # omitted keys are declared unknown, not 0
    assert turns[1].usage.output_tokens is None
    assert turns[2].fault == Fault(http_status=529, times=1)
    with pytest.raises(TypeError):
        turns[1].tool_calls[0].input["file_path"] = "elsewhere"  # type: ignore[index]


@pytest.mark.parametrize(
    ("snippet", "key", "fragment"),
    [
        # unknown keys at every level
        ("- text: hi\n  bogus: 1", "sessions[0].turns[0].bogus", "unknown key"),
        ("- tool_calls: [{name: Bash, args: {}}]", "sessions[0].turns[0].tool_calls[0].args", "unknown key"),
        ("- usage: {input_token: 3}", "sessions[0].turns[0].usage.input_token", "unknown key"),
        ("- fault: {status: 529}", "sessions[0].turns[0].fault.status", "unknown key"),
        # bad faults
        ("- fault: {http_status: 200}", "sessions[0].turns[0].fault.http_status", "400..599"),
        ("- fault: {http_status: 529, cut_after_events: 2}", "fault.cut_after_events", "combined"),
        ("- fault: {http_status: 529, times: 0}", "sessions[0].turns[0].fault.times", "at least 1"),
        ("- fault: {cut_after_events: -1}", "fault.cut_after_events", "non-negative int"),
        ("- fault: {delay_s: -0.5}", "fault.delay_s", "non-negative number"),
        ("- fault: {reset: true, http_status: 529}", "fault.reset", "cannot be combined"),
        ("- fault: {reset: true, cut_after_events: 1}", "fault.reset", "cannot be combined"),
        ("- fault: {reset: 'yes'}", "fault.reset", "want true or false"),
        ("- fault: {reset: false}", "sessions[0].turns[0].fault", "at least one of"),
        ("- fault: {}", "sessions[0].turns[0].fault", "at least one of"),
        # bad usage values
        ("- usage: {input_tokens: -1}", "sessions[0].turns[0].usage.input_tokens", "non-negative int"),
        ("- usage: {output_tokens: 1.5}", "usage.output_tokens", "non-negative int"),
        ("- usage: {output_tokens: '10'}", "usage.output_tokens", "non-negative int"),
        ("- usage: {cache_read_input_tokens: true}", "usage.cache_read_input_tokens", "non-negative int"),
        # wrong types
        ("- text: 42", "sessions[0].turns[0].text", "non-empty string"),
        ("- tool_calls: {name: Bash}", "sessions[0].turns[0].tool_calls", "want a list"),
        ("- tool_calls: [{input: {}}]", "tool_calls[0].name", "missing required key"),
        ("- tool_calls: [{name: ''}]", "tool_calls[0].name", "non-empty tool name"),
        ("- tool_calls: [{name: Bash, input: [ls]}]", "tool_calls[0].input", "want a mapping"),
        ("- tool_calls: [{name: Bash, input: {when: 2024-01-01}}]", "input.when", "JSON value"),
    ],
)
def test_bad_turn_names_file_cell_and_key(tmp_path: Path, snippet: str, key: str, fragment: str) -> None:
    body = textwrap.indent(snippet, " " * 10)
    head = "schema_version: 1\nmodel: m\ncells:\n  - match: {task: t1}\n    sessions:\n      - turns:\n"
    text = f"{head}{body}\n"
    path = write(tmp_path, text)
    with pytest.raises(ScriptError) as caught:
        load_script(path)
    message = str(caught.value)
    assert str(path) in message and "cells[0] match={task: 't1'}" in message
    assert key in message and fragment in message
    assert caught.value.source == str(path) and caught.value.key.endswith(key)


@pytest.mark.parametrize(
    ("match", "key", "fragment"),
    [
        ("{task: 5}", "match.task", "glob string"),
        ("{arm: []}", "match.arm", "non-empty list"),
        ("{arm: [ok, 3]}", "match.arm", "glob string"),
        ('"bug-*"', "match", "want a mapping"),
        ("{run: 1}", "match.run", "unknown key"),
    ],
)
def test_bad_match_names_file_cell_and_key(tmp_path: Path, match: str, key: str, fragment: str) -> None:
    path = write(tmp_path, f"schema_version: 1\nmodel: m\ncells:\n  - match: {match}\n    sessions: []\n")
    with pytest.raises(ScriptError) as caught:
        load_script(path)
    message = str(caught.value)
    assert str(path) in message and "cells[0]" in message and key in message and fragment in message


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("schema_version: 2\nmodel: m\ncells: []\n", "schema_version"),
        ("schema_version: 1\ncells: []\n", "model"),
        ("schema_version: 1\nmodel: m\ncells: []\nextra: 1\n", "extra"),
        ("schema_version: 1\nmodel: m\ncells: {}\n", "cells"),
        ("- just a list\n", "want a mapping"),
        ("schema_version: 1\nmodel: m\ncells:\n  - sessions: [{turns: [], more: 1}]\n", "sessions[0].more"),
    ],
)
def test_bad_top_level_names_file_and_key(tmp_path: Path, text: str, key: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ScriptError, match=r"demo\.script\.yaml") as caught:
        load_script(path)
    assert key in str(caught.value)


def test_unreadable_or_broken_yaml_is_a_script_error(tmp_path: Path) -> None:
    with pytest.raises(ScriptError, match=r"missing\.yaml: cannot load"):
        load_script(tmp_path / "missing.yaml")
    with pytest.raises(ScriptError, match="cannot load"):
        load_script(write(tmp_path, "cells: [unclosed\n"))


def test_constructors_validate_without_a_file() -> None:
    with pytest.raises(ScriptError, match="input_tokens"):
        Usage(input_tokens=-3)
    with pytest.raises(ScriptError, match="http_status"):
        Fault(http_status=True)  # type: ignore[arg-type]
    with pytest.raises(ScriptError, match="model"):
        Script(model="", cells=())


def test_cwd_substitution_replaces_only_the_exact_token() -> None:
    source = 'def f(x):\n    return {"k": {x}} if f"{x}" else {cwd_x} or {CWD}\n# {cwd}\n'
    call = ToolCall(
        name="Write",
        input={"file_path": "{cwd}/src/app.py", "content": source, "nested": [{"p": "{cwd}"}, 3, None]},
    )
    out = substitute_cwd(call.input, "/work/ws")
    assert out == {
        "file_path": "/work/ws/src/app.py",
        "content": source.replace("# {cwd}", "# /work/ws"),
        "nested": [{"p": "/work/ws"}, 3, None],
    }
    assert "{cwd_x}" in out["content"] and "{CWD}" in out["content"] and '{"k": {x}}' in out["content"]
    json.dumps(out)  # thawed: plain dicts and lists again
    # Unknown cwd: the token stays, so a broken request is visible instead of writing to "/src".
    assert substitute_cwd(call.input, None)["file_path"] == "{cwd}/src/app.py"


def test_first_matching_cell_wins(tmp_path: Path) -> None:
    script = parse_script(
        {
            "schema_version": 1,
            "model": "m",
            "cells": [
                {
                    "match": {"task": "bug-*", "arm": ["workflow", "workflow_direct"]},
                    "sessions": [{"turns": [{"text": "A"}]}],
                },
                {"match": {"task": ["bug-*", "feat-?"]}, "sessions": [{"turns": [{"text": "B"}]}]},
                {"sessions": [{"turns": [{"text": "C"}]}]},  # no match key at all: everything
            ],
        },
        source="inline",
    )

    def text_for(task: str, arm: str) -> str | None:
        cell = script.cell_for(task=task, arm=arm)
        return cell.sessions[0].turns[0].text if cell else None

    assert text_for("bug-1", "workflow") == "A"
    assert text_for("bug-1", "workflow_direct") == "A"
    assert text_for("bug-1", "baseline") == "B"
    assert text_for("feat-9", "workflow") == "B"
    assert text_for("feat-10", "workflow") == "C"
    assert text_for("BUG-1", "workflow") == "C"  # case matters
    only_bugs = parse_script(
        {"schema_version": 1, "model": "m", "cells": [{"match": {"task": "bug-*"}, "sessions": []}]},
        source="x",
    )
    assert only_bugs.cell_for(task="feat-1", arm="workflow") is None


# ---- wire helpers (pure functions, no server)


def test_working_directory_is_read_from_any_non_assistant_message_or_system() -> None:
    env = "# Environment\n - Primary working directory: /tmp/x y/ws\n - Is a git repository: true\n"
    as_system_message = {"messages": [{"role": "user", "content": "hi"}, {"role": "system", "content": env}]}
    assert _wire.working_directory(as_system_message) == "/tmp/x y/ws"
    reminder = [
        {"type": "text", "text": f"<system-reminder>\n{env}</system-reminder>"},
        {"type": "text", "text": "go"},
    ]
    assert _wire.working_directory({"messages": [{"role": "user", "content": reminder}]}) == "/tmp/x y/ws"
    assert (
        _wire.working_directory({"messages": [], "system": [{"type": "text", "text": env}]}) == "/tmp/x y/ws"
    )
    spoofed = {"messages": [{"role": "assistant", "content": "Primary working directory: /etc"}]}
    assert _wire.working_directory(spoofed) is None


def test_turn_and_session_come_from_the_request() -> None:
    body = {
        "messages": [{"role": "user"}, {"role": "system"}, {"role": "assistant"}, {"role": "user"}],
        "metadata": {"user_id": json.dumps({"device_id": "d", "session_id": "s-meta"})},
    }
    assert _wire.assistant_turns(body) == 1
    assert _wire.session_id({"X-Claude-Code-Session-Id": "s-header"}, body) == "s-header"
    assert _wire.session_id({}, body) == "s-meta"
    assert _wire.session_id({}, {"metadata": {"user_id": "not json"}}) is None


def test_sse_events_reassemble_to_the_scripted_message() -> None:
    tool_input = {"file_path": "/ws/a.py", "content": "x = {1: 2}\n"}
    reply = _wire.Reply(
        message_id="msg_1",
        model="m",
        text="Hello there",
        tool_uses=(_wire.ToolUse(id="toolu_1", name="Write", input=tool_input),),
        usage=Usage(input_tokens=7, output_tokens=3, cache_read_input_tokens=2),
    )
    events = _wire.sse_events(reply)
    names = [name for name, _ in events]
    assert names[0] == "message_start" and names[-2:] == ["message_delta", "message_stop"]
    assert names.count("content_block_start") == names.count("content_block_stop") == 2
    start_usage = events[0][1]["message"]["usage"]
    # Declared output in message_start too: the CLI's stream-json assistant events carry it.
    assert start_usage == {"input_tokens": 7, "output_tokens": 3, "cache_read_input_tokens": 2}
    assert events[-2][1]["usage"] == {"output_tokens": 3}
    assert events[-2][1]["delta"]["stop_reason"] == "tool_use"
    deltas = [data["delta"] for name, data in events if name == "content_block_delta"]
    text = "".join(d["text"] for d in deltas if d["type"] == "text_delta")
    partial = [d["partial_json"] for d in deltas if d["type"] == "input_json_delta"]
    assert text == "Hello there" and len(partial) >= 2 and json.loads("".join(partial)) == tool_input
    frame = _wire.encode_sse(*events[0]).decode()
    assert frame.startswith("event: message_start\ndata: {") and frame.endswith("\n\n")


def test_unknown_usage_is_zero_on_the_wire_and_cache_fields_are_omitted() -> None:
    reply = _wire.Reply(message_id="m", model="m", text="t", tool_uses=(), usage=Usage())
    message = _wire.json_message(reply)
    assert message["usage"] == {"input_tokens": 0, "output_tokens": 0}
    assert message["stop_reason"] == "end_turn" and message["content"] == [{"type": "text", "text": "t"}]
    assert _wire.fault_error_body(529)["error"]["type"] == "overloaded_error"
    assert _wire.fault_error_body(500)["error"] == {"type": "api_error", "message": "scripted fault"}


def test_turn_rejects_empty_text() -> None:
    with pytest.raises(ScriptError, match="text"):
        Turn(text="")


def test_scale_usage_scales_every_declared_count_and_keeps_unknown_unknown() -> None:
    data = {
        "schema_version": 1,
        "model": "m",
        "cells": [
            {
                "match": {"arm": "candidate_workflow"},
                "scale_usage": 0.8,
                "sessions": [{"turns": [{"text": "t", "usage": {"input_tokens": 1000, "output_tokens": 7}}]}],
            }
        ],
    }
    usage = parse_script(data, source="s.yaml").cells[0].sessions[0].turns[0].usage
    assert usage == Usage(input_tokens=800, output_tokens=5)  # cache fields stay None (unknown)
    for bad in (0, -1, 11, "0.8", True, float("nan")):
        data["cells"][0]["scale_usage"] = bad
        with pytest.raises(ScriptError, match=r"cells\[0\].*scale_usage"):
            parse_script(data, source="s.yaml")


def test_demo_candidate_workflow_declares_fewer_tokens_than_workflow() -> None:
    # The evolve demo promotes on this (README "Evolve"); the tool calls must stay identical.
    script = load_script(Path(__file__).parents[2] / "workflow_bench/corpus/scripts/demo.yaml")
    for task in ("trivial-amount-grouping", "bug-negative-amounts", "feature-report-filter"):
        inc = script.cell_for(task=task, arm="workflow")
        cand = script.cell_for(task=task, arm="candidate_workflow")
        assert inc is not cand and len(inc.sessions) == len(cand.sessions)
        for a, b in zip(inc.sessions, cand.sessions, strict=True):
            assert [t.tool_calls for t in a.turns] == [t.tool_calls for t in b.turns]
            assert sum(t.usage.output_tokens for t in b.turns) < sum(t.usage.output_tokens for t in a.turns)
