"""Subagent spend against the real CLI (no sandbox): what the parent stream shows, and what it omits.

The scripted provider serves a main loop and its subagent (told apart by the CLI's
``x-claude-code-agent-id`` header) and its ledger is ground truth. ``transcript_usage`` must equal
the ledger exactly for an Agent-tool subagent, while the CLI's ``result.usage`` (the main loop)
stays the smaller, partial number. A forked skill is the measured limit: CLI 2.1.332 never shows
its subagent's final message to the parent, so the transcript sum falls short of the ledger.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from workflow_bench.cells.stream_usage import transcript_usage
from workflow_bench.providers.connect import ledger_usage
from workflow_bench.providers.scripted import ScriptedProvider, parse_script
from workflow_bench.usage import USAGE_FIELDS

pytestmark = pytest.mark.component
CLI_TIMEOUT_S = 60


def _usage(i: int, o: int, cc: int, cr: int) -> dict:
    return {
        "input_tokens": i,
        "output_tokens": o,
        "cache_creation_input_tokens": cc,
        "cache_read_input_tokens": cr,
    }


def _script(first_call: dict) -> dict:
    return {
        "schema_version": 1,
        "model": "scripted-sub",
        "cells": [
            {
                "sessions": [
                    {
                        "turns": [
                            {
                                "text": "delegating",
                                "tool_calls": [first_call],
                                "usage": _usage(100, 10, 1, 2),
                            },
                            {"text": "all done", "usage": _usage(200, 20, 3, 4)},
                        ],
                        "subagents": [
                            {
                                "turns": [
                                    {
                                        "tool_calls": [
                                            {"name": "Read", "input": {"file_path": "{cwd}/a.txt"}}
                                        ],
                                        "usage": _usage(1000, 100, 10, 20),
                                    },
                                    {"text": "subagent finished", "usage": _usage(2000, 200, 30, 40)},
                                ]
                            }
                        ],
                    }
                ]
            }
        ],
    }


AGENT_CALL = {
    "name": "Agent",
    "input": {
        "description": "read a file",
        "prompt": "Read a.txt and report.",
        "subagent_type": "general-purpose",
        "run_in_background": False,
    },
}
FORK_SKILL_CALL = {"name": "Skill", "input": {"skill": "work"}}


def _run(
    claude_bin: Path, tmp_path: Path, script: dict, tools: str
) -> tuple[list[dict], ScriptedProvider, str]:
    ws, home = tmp_path / "ws", tmp_path / "home"
    (ws / ".claude" / "skills" / "work").mkdir(parents=True)
    home.mkdir()
    (ws / "a.txt").write_text("hello\n")
    (ws / ".claude" / "skills" / "work" / "SKILL.md").write_text(
        "---\nname: work\ndescription: do the work\ncontext: fork\nagent: general-purpose\n---\n\nDo it.\n"
    )
    provider = ScriptedProvider(parse_script(script, source="test"))
    key = provider.mint_key(task="t", arm="a", run=0)
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(home),
        "ANTHROPIC_BASE_URL": provider.base_url,
        "ANTHROPIC_API_KEY": key,
        "ANTHROPIC_MODEL": "scripted-sub",
        "CLAUDE_CODE_SUBAGENT_MODEL": "scripted-sub",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "CLAUDE_CODE_MAX_RETRIES": "0",
    }
    argv = [str(claude_bin), "-p", "--output-format", "stream-json", "--verbose", "--model", "scripted-sub"]
    argv += ["--permission-mode", "dontAsk", f"--tools={tools}", f"--allowedTools={tools}"]
    done = subprocess.run(
        argv, input="go", env=env, cwd=ws, capture_output=True, text=True, timeout=CLI_TIMEOUT_S
    )
    events = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    assert done.returncode == 0, done.stderr[-2000:]
    return events, provider, key


def _result_usage(events: list[dict]) -> dict:
    (result,) = [e for e in events if e["type"] == "result"]
    return {name: result["usage"][name] for name in USAGE_FIELDS}


def test_agent_subagent_transcript_sum_equals_the_ledger(claude_bin, tmp_path):
    events, provider, key = _run(claude_bin, tmp_path, _script(AGENT_CALL), "Read,Agent")
    with provider:
        ledger = provider.ledger(key)
    assert [e.subagent for e in ledger] == [None, 0, 0, None]
    served = ledger_usage(ledger)
    assert served == {
        "input_tokens": 3300,
        "cache_creation_input_tokens": 44,
        "cache_read_input_tokens": 66,
        "output_tokens": 330,
    }
    assert transcript_usage(events) == served
    main = _result_usage(events)
    assert main == {
        "input_tokens": 300,
        "cache_creation_input_tokens": 4,
        "cache_read_input_tokens": 6,
        "output_tokens": 30,
    }
    # The subagent's last message is not an assistant event: only the Agent result's usage has it.
    # Negative control: without that tool_use_result the sum falls short by exactly that message.
    stripped = [{k: v for k, v in e.items() if k != "tool_use_result"} for e in events]
    assert transcript_usage(stripped)["input_tokens"] == 3300 - 2000


def test_forked_skill_subagent_is_partly_invisible_to_the_parent_stream(claude_bin, tmp_path):
    events, provider, key = _run(claude_bin, tmp_path, _script(FORK_SKILL_CALL), "Read,Skill")
    with provider:
        served = ledger_usage(provider.ledger(key))
    seen = transcript_usage(events)
    main = _result_usage(events)
    assert main["input_tokens"] == 300 < seen["input_tokens"]
    # Measured on 2.1.332: the fork's final message (2000 input tokens) reaches the parent nowhere.
    assert served["input_tokens"] - seen["input_tokens"] == 2000
