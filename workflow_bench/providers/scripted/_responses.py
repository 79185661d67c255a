"""OpenAI Responses wire format for the scripted provider: reading requests, encoding replies.

The second dialect, next to Anthropic Messages (``_wire``): what LiteLLM 1.108.7 sends upstream
when Claude Code talks to it on ``/v1/messages`` with an ``openai/`` model (measured: LiteLLM
bridges ``/v1/messages`` to ``POST /v1/responses`` by default, streaming or not). Holds no state
and does no I/O; the server decides *what* to answer, this module only how it looks.

Requests: ``input`` is a list of items. A ``message`` item has a role and ``input_text`` /
``output_text`` parts; the CLI's tool calls come back as ``function_call`` items and their results
as ``function_call_output`` items. One assistant message of the Anthropic conversation becomes a
*run* of consecutive assistant-side items (its text message, then one ``function_call`` per tool
use), so the turn index counts runs, not items, and a retry still maps to the same turn.

Usage on the wire follows OpenAI's arithmetic: ``input_tokens`` is the *whole* prompt and
``input_tokens_details.cached_tokens`` / ``cache_write_tokens`` are parts of it. A turn's declared
(Anthropic-shaped) usage is encoded so that the same billed work reads back identically:
whole = input + cache_read + cache_creation. A cache field the turn did not declare is left out
of ``input_tokens_details`` (and the details object is left out when both are), never sent as 0.
LiteLLM 1.108.7 maps ``cache_write_tokens`` back to Anthropic ``cache_creation_input_tokens``
(measured), so declared cache writes survive the round trip.
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Mapping
from typing import Any

from workflow_bench.providers.scripted._script import Usage
from workflow_bench.providers.scripted._wire import Reply, working_directory

_ASSISTANT_ITEM_TYPES = frozenset({"function_call", "reasoning"})


def _is_assistant_item(item: Mapping[str, Any]) -> bool:
    kind = item.get("type", "message")
    return kind in _ASSISTANT_ITEM_TYPES or (kind == "message" and item.get("role") == "assistant")


def _items(body: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    raw = body.get("input")
    if isinstance(raw, str):
        return [{"type": "message", "role": "user", "content": raw}]
    return [i for i in raw if isinstance(i, Mapping)] if isinstance(raw, list) else []


def assistant_turns(body: Mapping[str, Any]) -> int:
    """Turn index of a Responses request: runs of consecutive assistant-side items."""
    turns, inside = 0, False
    for item in _items(body):
        assistant = _is_assistant_item(item)
        if assistant and not inside:
            turns += 1
        inside = assistant
    return turns


def as_messages(body: Mapping[str, Any]) -> dict[str, Any]:
    """An Anthropic-shaped view (``system`` + ``messages``) for the dialect-neutral helpers."""
    messages: list[dict[str, Any]] = []
    for item in _items(body):
        kind = item.get("type", "message")
        if kind == "message":
            role = "assistant" if item.get("role") == "assistant" else str(item.get("role") or "user")
            content = item.get("content")
        elif kind == "function_call_output":
            role, content = "user", [{"type": "text", "text": str(item.get("output") or "")}]
        else:
            role, content = "assistant", []
        messages.append({"role": role, "content": content})
    instructions = body.get("instructions")
    return {"system": instructions if isinstance(instructions, str) else None, "messages": messages}


def request_cwd(body: Mapping[str, Any]) -> str | None:
    """The session's working directory, found where ``_wire.working_directory`` looks."""
    return working_directory(as_messages(body))


def wire_usage(usage: Usage) -> dict[str, Any]:
    """Declared usage in OpenAI's whole-plus-subsets form (see the module docstring)."""
    parts = (usage.input_tokens, usage.cache_read_input_tokens, usage.cache_creation_input_tokens)
    whole = sum(p or 0 for p in parts)
    output = usage.output_tokens or 0
    out: dict[str, Any] = {"input_tokens": whole, "output_tokens": output, "total_tokens": whole + output}
    details = {}
    if usage.cache_read_input_tokens is not None:
        details["cached_tokens"] = usage.cache_read_input_tokens
    if usage.cache_creation_input_tokens is not None:
        details["cache_write_tokens"] = usage.cache_creation_input_tokens
    if details:
        out["input_tokens_details"] = details
    return out


def new_response_id() -> str:
    return "resp_scripted_" + secrets.token_hex(12)


def _output_items(reply: Reply) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    if reply.text is not None:
        items.append(
            {
                "type": "message",
                "id": "msg_" + secrets.token_hex(12),
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": reply.text, "annotations": []}],
            }
        )
    for use in reply.tool_uses:
        items.append(
            {
                "type": "function_call",
                "id": "fc_" + secrets.token_hex(12),
                "call_id": use.id,
                "name": use.name,
                "arguments": json.dumps(dict(use.input), ensure_ascii=False),
                "status": "completed",
            }
        )
    return items


def _response(reply: Reply, *, status: str, output: list[dict[str, Any]], usage: Any) -> dict[str, Any]:
    return {
        "id": reply.message_id,
        "object": "response",
        "created_at": int(time.time()),
        "status": status,
        "model": reply.model,
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": usage,
    }


def json_response(reply: Reply) -> dict[str, Any]:
    """The non-streaming form of a reply (``stream`` absent or false)."""
    return _response(reply, status="completed", output=_output_items(reply), usage=wire_usage(reply.usage))


def _slices(text: str, parts: int) -> list[str]:
    step = max(1, -(-len(text) // parts))
    return [text[i : i + step] for i in range(0, len(text), step)] or [""]


def sse_events(reply: Reply) -> list[tuple[str, dict[str, Any]]]:
    """The SSE events of a streamed reply, in order, ending with ``response.completed``.

    Text and function-call arguments arrive in a few slices each, so clients must reassemble
    deltas. ``cut_after_events`` in a script counts entries of this list.
    """
    events: list[tuple[str, dict[str, Any]]] = []

    def add(name: str, data: dict[str, Any]) -> None:
        events.append((name, {"type": name, "sequence_number": len(events), **data}))

    pending = _response(reply, status="in_progress", output=[], usage=None)
    add("response.created", {"response": pending})
    add("response.in_progress", {"response": pending})
    items = _output_items(reply)
    for index, item in enumerate(items):
        if item["type"] == "message":
            text = item["content"][0]["text"]
            add("response.output_item.added", {"output_index": index, "item": {**item, "content": []}})
            where = {"item_id": item["id"], "output_index": index, "content_index": 0}
            part = {"type": "output_text", "text": "", "annotations": []}
            add("response.content_part.added", {**where, "part": part})
            for piece in _slices(text, 2):
                add("response.output_text.delta", {**where, "delta": piece})
            add("response.output_text.done", {**where, "text": text})
            add("response.content_part.done", {**where, "part": {**part, "text": text}})
        else:
            add("response.output_item.added", {"output_index": index, "item": {**item, "arguments": ""}})
            where = {"item_id": item["id"], "output_index": index}
            for piece in _slices(item["arguments"], 3):
                add("response.function_call_arguments.delta", {**where, "delta": piece})
            add("response.function_call_arguments.done", {**where, "arguments": item["arguments"]})
        add("response.output_item.done", {"output_index": index, "item": item})
    done = _response(reply, status="completed", output=items, usage=wire_usage(reply.usage))
    add("response.completed", {"response": done})
    return events


def error_body(status: int, *, message: str) -> dict[str, Any]:
    """OpenAI's error envelope for an HTTP error status."""
    kind = {401: "invalid_request_error", 404: "invalid_request_error", 429: "rate_limit_exceeded"}.get(
        status, "server_error"
    )
    return {"error": {"message": message, "type": kind, "param": None, "code": None}}
