"""The real LiteLLM proxy (pinned 1.108.7) in front of the scripted provider's OpenAI Responses API.

No CLI here: raw Anthropic Messages requests, as Claude Code sends them, go through the proxy, and
each test checks what really arrived in the gateway's usage log (LiteLLM's own usage shape, as
its callback is handed it) and what the scripted provider served. One proxy serves the module.
"""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest

from workflow_bench.providers.connect import gateway_lines
from workflow_bench.providers.gateway import Gateway, GatewayRoute, GatewaySpec, proxy_config
from workflow_bench.providers.scripted import ScriptedProvider, parse_script
from workflow_bench.usage import USAGE_FIELDS

pytestmark = pytest.mark.component

SCRIPT = {
    "schema_version": 1,
    "model": "scripted-gw",
    "cells": [
        {
            "match": {"task": "cached"},
            "sessions": [
                {
                    "turns": [
                        {
                            "text": "cached reply",
                            "usage": {
                                "input_tokens": 4000,
                                "cache_read_input_tokens": 44000,
                                "cache_creation_input_tokens": 1000,
                                "output_tokens": 20,
                            },
                        }
                    ]
                }
            ],
        },
        {
            "match": {"task": "uncached"},
            "sessions": [
                {"turns": [{"text": "no cache fields", "usage": {"input_tokens": 500, "output_tokens": 9}}]}
            ],
        },
        {
            "match": {"task": "tool"},
            "sessions": [
                {
                    "turns": [
                        {
                            "text": "writing",
                            "tool_calls": [
                                {
                                    "name": "Write",
                                    "input": {"file_path": "/w/a.py", "content": "x = {1: 2}\n"},
                                }
                            ],
                            "usage": {"input_tokens": 10, "output_tokens": 5},
                        }
                    ]
                }
            ],
        },
        {
            "match": {"task": "overloaded"},
            "sessions": [{"turns": [{"text": "never", "fault": {"http_status": 529}}]}],
        },
    ],
}


class Stack:
    def __init__(self, provider: ScriptedProvider, gateway: Gateway) -> None:
        self.provider = provider
        self.gateway = gateway

    def cell(self, task: str) -> tuple[str, str, str]:
        """(gateway key, tag, scripted key) for a fresh cell of ``task``."""
        scripted = self.provider.mint_key(task=task, arm="baseline", run=0)
        key, tag = self.gateway.mint_key(tag=scripted)
        return key, tag, scripted

    def post(self, key: str, body: dict, *, headers: dict | None = None) -> tuple[int, bytes]:
        parts = urlsplit(self.gateway.base_url)
        conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=60)
        try:
            conn.request(
                "POST",
                "/v1/messages",
                body=json.dumps(body),
                headers={
                    "x-api-key": key,
                    "anthropic-version": "2023-06-01",
                    "content-type": "application/json",
                    **(headers or {}),
                },
            )
            response = conn.getresponse()
            return response.status, response.read()
        finally:
            conn.close()


@pytest.fixture(scope="module")
def stack(litellm_bin) -> Iterator[Stack]:
    with ScriptedProvider(parse_script(SCRIPT, source="test")) as provider:
        route = GatewayRoute(
            model_name="scripted-gw", upstream_model="openai/scripted-gw", api_base=f"{provider.base_url}/v1"
        )
        with Gateway(GatewaySpec(routes=(route,), forward_cell=True)) as gateway:
            yield Stack(provider, gateway)


def _message(text: str = "hi", *, stream: bool = False) -> dict:
    return {
        "model": "scripted-gw",
        "max_tokens": 64,
        "stream": stream,
        "messages": [{"role": "user", "content": text}],
    }


def _sse_usage(raw: bytes) -> dict:
    """The Anthropic usage a streaming client ends up with: message_start, then message_delta over it."""
    usage: dict = {}
    for line in raw.decode().splitlines():
        if line.startswith("data: "):
            event = json.loads(line[6:])
            if event.get("type") == "message_start":
                usage.update(event["message"]["usage"])
            elif event.get("type") == "message_delta":
                usage.update(event.get("usage") or {})
    return usage


@pytest.mark.parametrize("stream", [False, True])
def test_cached_prompt_reads_back_as_ordinary_plus_cached(stack: Stack, stream: bool) -> None:
    key, tag, scripted = stack.cell("cached")
    status, raw = stack.post(key, _message(stream=stream))
    assert status == 200, raw[:500]
    records, complete = stack.gateway.cell_records(tag)
    assert complete
    success = [r for r in records if r["event"] == "success"]
    assert len(success) == 1 and success[0]["provider"] == "openai"
    # What LiteLLM 1.108.7 really hands the callback: its chat-shaped usage, whole prompt plus parts.
    native = success[0]["usage"]
    assert native["prompt_tokens"] == 49000 and native["completion_tokens"] == 20
    assert native["prompt_tokens_details"]["cached_tokens"] == 44000
    assert native["prompt_tokens_details"]["cache_write_tokens"] == 1000
    lines, normalized, problems = gateway_lines(_cell_key(), records)
    assert problems == [] and "cell" not in lines[0]
    assert normalized == [
        {
            "input_tokens": 4000,
            "cache_creation_input_tokens": 1000,
            "cache_read_input_tokens": 44000,
            "output_tokens": 20,
        }
    ]
    # The client side agrees: LiteLLM's Anthropic reply carries the same split.
    usage = _sse_usage(raw) if stream else json.loads(raw)["usage"]
    assert usage["input_tokens"] == 4000 and usage["cache_read_input_tokens"] == 44000
    # And the scripted provider served exactly one Responses request to this cell.
    ledger = stack.provider.ledger(scripted)
    assert [(e.dialect, e.stream, e.completed) for e in ledger] == [("openai-responses", stream, True)]


def test_omitted_cache_fields_stay_unknown(stack: Stack) -> None:
    key, tag, _ = stack.cell("uncached")
    status, raw = stack.post(key, _message(stream=True))
    assert status == 200, raw[:500]
    records, _ = stack.gateway.cell_records(tag)
    (success,) = [r for r in records if r["event"] == "success"]
    assert success["usage"]["prompt_tokens"] == 500 and success["usage"]["prompt_tokens_details"] is None
    _, normalized, _ = gateway_lines(_cell_key(), records)
    # Negative control on the rule: the whole is known, but how much of it was cached is not.
    assert normalized == [dict.fromkeys(USAGE_FIELDS[:3]) | {"output_tokens": 9}]
    # LiteLLM itself tells the client "0 cached": exactly the false zero we must not copy.
    assert _sse_usage(raw).get("cache_read_input_tokens") == 0


def test_tool_calls_round_trip_as_function_call_items(stack: Stack) -> None:
    key, _, scripted = stack.cell("tool")
    status, raw = stack.post(key, _message())
    assert status == 200, raw[:500]
    content = json.loads(raw)["content"]
    assert [b["type"] for b in content] == ["text", "tool_use"]
    assert content[1]["name"] == "Write" and content[1]["input"] == {
        "file_path": "/w/a.py",
        "content": "x = {1: 2}\n",
    }
    assert stack.provider.ledger(scripted)[0].tool_calls == ("Write",)


def test_each_cell_is_attributed_by_its_own_key(stack: Stack) -> None:
    first, second = stack.cell("uncached"), stack.cell("uncached")
    for key, _, _ in (first, second, second):
        assert stack.post(key, _message())[0] == 200
    assert len([r for r in stack.gateway.cell_records(first[1])[0] if r["event"] == "success"]) == 1
    assert len([r for r in stack.gateway.cell_records(second[1])[0] if r["event"] == "success"]) == 2
    assert len(stack.provider.ledger(first[2])) == 1 and len(stack.provider.ledger(second[2])) == 2


def test_keys_it_did_not_mint_are_refused(stack: Stack) -> None:
    key, tag, scripted = stack.cell("uncached")
    forged = key[:-1] + ("0" if key[-1] != "0" else "1")  # same tag, wrong mac
    for bad in (forged, scripted, "sk-wfbench-x", ""):
        status, _ = stack.post(bad, _message())
        assert status in (400, 401), bad
    assert stack.gateway.cell_records(tag, wait_s=0)[0] == ()
    assert stack.provider.ledger(scripted) == ()


def test_an_upstream_529_is_a_logged_failure_with_unknown_usage(stack: Stack) -> None:
    key, tag, scripted = stack.cell("overloaded")
    status, raw = stack.post(key, _message())
    assert status >= 500, raw[:300]
    records, complete = stack.gateway.cell_records(tag)
    assert complete
    (failure,) = [r for r in records if r["event"] == "failure"]
    assert failure["error"]["status_code"] == 529 and failure["usage"] is None
    assert [e.status for e in stack.provider.ledger(scripted)] == [529]


def test_the_private_dir_is_owner_only(stack: Stack) -> None:
    private = stack.gateway.private_dir
    assert private.stat().st_mode & 0o777 == 0o700
    for name in ("config.yaml", "wfbench_proxy_hooks.py", "usage.jsonl", "proxy.log"):
        assert (private / name).stat().st_mode & 0o777 == 0o600, name


def test_config_keeps_the_upstream_key_out_of_the_file() -> None:
    route = GatewayRoute(model_name="gpt-5", upstream_model="openai/gpt-5", api_key_env="OPENAI_API_KEY")
    config = proxy_config(GatewaySpec(routes=(route,), upstream_env={"OPENAI_API_KEY": "sk-real-secret"}))
    text = json.dumps(config)
    assert "sk-real-secret" not in text
    assert config["model_list"][0]["litellm_params"]["api_key"] == "os.environ/OPENAI_API_KEY"
    assert config["litellm_settings"]["num_retries"] == 0


def _cell_key():
    from workflow_bench.providers.access import CellKey

    return CellKey(task_id="t", run=0, arm="a")


def test_the_free_model_template_starts_and_serves_both_routes(litellm_bin, tmp_path) -> None:
    """The template is a working config: the real proxy loads it and lists its two models."""
    import os
    import signal
    import socket
    import subprocess
    import time
    from pathlib import Path

    template = Path(__file__).resolve().parents[2] / "free-model.litellm.yaml"
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = {
        "PATH": f"{litellm_bin.parent}:/usr/bin:/bin",
        "HOME": str(tmp_path),
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "LITELLM_MASTER_KEY": "sk-template-test-key",
        "OPENROUTER_API_KEY": "sk-or-unused",
    }
    argv = [str(litellm_bin), "--config", str(template), "--host", "127.0.0.1", "--port", str(port)]
    log = tmp_path / "proxy.log"
    with open(log, "wb") as sink:
        proc = subprocess.Popen(argv, env=env, stdout=sink, stderr=sink, start_new_session=True)
    try:
        deadline, listed = time.monotonic() + 120, None
        while time.monotonic() < deadline and proc.poll() is None:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            try:
                conn.request("GET", "/v1/models", headers={"Authorization": "Bearer sk-template-test-key"})
                response = conn.getresponse()
                if response.status == 200:
                    listed = {m["id"] for m in json.loads(response.read())["data"]}
                    break
            except OSError:
                time.sleep(0.5)
            finally:
                conn.close()
        assert listed == {"free-coder", "local-coder"}, log.read_text()[-2000:]
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
