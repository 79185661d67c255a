"""Anthropic Messages wire format for the scripted provider: reading requests, encoding replies.

Owns the byte-level shape of what the Claude Code CLI sends and accepts (verified against CLI
2.1.332, see tests/component/test_scripted_provider.py): which request fields identify the
session, the turn and the working directory, and how a scripted reply becomes an SSE stream or a
JSON message. It holds no state and does no I/O; the server decides *what* to answer.

Usage on the wire: ``message_start.usage`` always carries ``input_tokens`` and ``output_tokens``
(the API format requires both), so a turn that declares them unknown sends 0 there, while the
ledger keeps ``None``. ``output_tokens`` is sent as the declared value in both ``message_start``
and ``message_delta``: CLI 2.1.332 lets the delta replace the start value (it did not double), and
its stream-json ``assistant`` events carry the *start* usage, so declaring output there too is what
makes transcript-summed usage equal the ledger. (The real API sends a placeholder of about 1 in
``message_start``; against it, transcript output is a lower bound, as the row schema says.) Cache
fields are sent in ``message_start`` only when declared. The CLI's ``result.usage`` is then the
per-field sum of the declared usage over the turns it was served.
"""

from __future__ import annotations

import json
import re
import secrets
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from email.message import Message
from typing import Any

from workflow_bench.providers.scripted._script import Usage

# The environment block renders it as " - Primary working directory: /abs/path" (a list item).
_CWD_LINE = re.compile(r"^[ \t]*(?:- )?Primary working directory:[ \t]*(/[^\r\n]*?)[ \t]*$", re.MULTILINE)


@dataclass(frozen=True, slots=True)
class ToolUse:
    """A tool_use block ready for the wire: id, name and the input after ``{cwd}`` substitution."""

    id: str
    name: str
    input: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Reply:
    """One assistant message as the provider will send it."""

    message_id: str
    model: str
    text: str | None
    tool_uses: tuple[ToolUse, ...]
    usage: Usage

    @property
    def stop_reason(self) -> str:
        return "tool_use" if self.tool_uses else "end_turn"


# Request headers as the HTTP server hands them over: looked up case-insensitively (an
# ``email.message.Message``), or a plain mapping in tests. Never copied into a dict: HTTP header
# names are case-insensitive, and a dict lookup would miss a name a client spelled differently.
Headers = Mapping[str, str] | Message


def new_tool_use_id() -> str:
    return "toolu_" + secrets.token_hex(12)


def new_message_id() -> str:
    return "msg_scripted_" + secrets.token_hex(12)


# ---- request inspection


def _texts(content: object) -> Iterator[str]:
    """Every text string inside a message's ``content`` (a string or a list of blocks)."""
    if isinstance(content, str):
        yield content
    elif isinstance(content, list):
        for block in content:
            if isinstance(block, Mapping):
                if isinstance(block.get("text"), str):
                    yield block["text"]
                if block.get("type") == "tool_result":
                    yield from _texts(block.get("content"))


def working_directory(body: Mapping[str, Any]) -> str | None:
    """The session's cwd from ``Primary working directory: <path>`` in the request, or ``None``.

    CLI 2.1.332 sends it in a ``role: "system"`` entry of ``messages`` (the environment block);
    older CLIs sent it in a ``<system-reminder>`` of the first user message. So every non-assistant
    message is searched in order, then the top-level system blocks; the first hit wins. Assistant
    messages are skipped: scripted text must never redirect a later tool call.
    """
    sources: list[str] = []
    messages = body.get("messages")
    if isinstance(messages, list):
        for message in messages:
            if isinstance(message, Mapping) and message.get("role") != "assistant":
                sources.extend(_texts(message.get("content")))
    sources.extend(_texts(body.get("system")))
    for text in sources:
        found = _CWD_LINE.search(text)
        if found:
            return found.group(1)
    return None


def assistant_turns(body: Mapping[str, Any]) -> int:
    """Turn index of a request: how many assistant messages it already holds.

    Stateless, so a retried request maps to the same turn as the original.
    """
    messages = body.get("messages")
    if not isinstance(messages, list):
        return 0
    return sum(1 for m in messages if isinstance(m, Mapping) and m.get("role") == "assistant")


def session_id(headers: Headers, body: Mapping[str, Any]) -> str | None:
    """The CLI session: ``X-Claude-Code-Session-Id`` header, else ``metadata.user_id``'s session_id."""
    header = headers.get("X-Claude-Code-Session-Id")
    if header:
        return header
    metadata = body.get("metadata")
    user_id = metadata.get("user_id") if isinstance(metadata, Mapping) else None
    if isinstance(user_id, str):
        try:
            decoded = json.loads(user_id)
        except json.JSONDecodeError:
            return None
        if isinstance(decoded, Mapping) and isinstance(decoded.get("session_id"), str):
            return decoded["session_id"]
    return None


def agent_id(headers: Headers) -> str | None:
    """The subagent a request belongs to (``x-claude-code-agent-id``), or ``None`` for the main loop.

    CLI 2.1.332 sends the parent's session id on subagent requests too (measured), so without
    this header a subagent's first request would replay its parent's first turn.
    """
    return headers.get("x-claude-code-agent-id") or None


# ---- reply encoding


def _wire_usage(usage: Usage, *, output_tokens: int | None) -> dict[str, int]:
    out = {"input_tokens": usage.input_tokens or 0, "output_tokens": output_tokens or 0}
    for name in ("cache_creation_input_tokens", "cache_read_input_tokens"):
        value = getattr(usage, name)
        if value is not None:
            out[name] = value
    return out


def _slices(text: str, parts: int) -> list[str]:
    # A couple of slices rather than one: clients must reassemble deltas, so the test should make them.
    step = max(1, -(-len(text) // parts))
    return [text[i : i + step] for i in range(0, len(text), step)] or [""]


def _content(reply: Reply) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    if reply.text is not None:
        blocks.append({"type": "text", "text": reply.text})
    for use in reply.tool_uses:
        blocks.append({"type": "tool_use", "id": use.id, "name": use.name, "input": dict(use.input)})
    return blocks


def sse_events(reply: Reply) -> list[tuple[str, dict[str, Any]]]:
    """The SSE events for a reply, in order. ``cut_after_events`` counts entries of this list.

    message_start, then per block content_block_start / delta(s) / stop, then message_delta and
    message_stop. No ``ping``, so event counts in scripts stay predictable.
    """
    start_message: dict[str, Any] = {
        "id": reply.message_id,
        "type": "message",
        "role": "assistant",
        "model": reply.model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": _wire_usage(reply.usage, output_tokens=reply.usage.output_tokens),
    }
    events: list[tuple[str, dict[str, Any]]] = [
        ("message_start", {"type": "message_start", "message": start_message})
    ]
    for index, block in enumerate(_content(reply)):
        start: dict[str, Any]
        if block["type"] == "text":
            start = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": piece} for piece in _slices(block["text"], 2)]
        else:
            start = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            encoded = json.dumps(block["input"], ensure_ascii=False)
            deltas = [{"type": "input_json_delta", "partial_json": piece} for piece in _slices(encoded, 3)]
        events.append(
            ("content_block_start", {"type": "content_block_start", "index": index, "content_block": start})
        )
        events.extend(
            ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": d})
            for d in deltas
        )
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    events.append(
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": reply.stop_reason, "stop_sequence": None},
                "usage": {"output_tokens": reply.usage.output_tokens or 0},
            },
        )
    )
    events.append(("message_stop", {"type": "message_stop"}))
    return events


def encode_sse(event: str, data: Mapping[str, Any]) -> bytes:
    # ASCII escapes: a lone surrogate in a scripted tool name is sent as \\ud800, as a real API would.
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


def json_message(reply: Reply) -> dict[str, Any]:
    """The non-streaming form of a reply (``stream: false``)."""
    return {
        "id": reply.message_id,
        "type": "message",
        "role": "assistant",
        "model": reply.model,
        "content": _content(reply),
        "stop_reason": reply.stop_reason,
        "stop_sequence": None,
        "usage": _wire_usage(reply.usage, output_tokens=reply.usage.output_tokens),
    }


def error_body(kind: str, *, message: str) -> dict[str, Any]:
    """Anthropic error envelope, e.g. ``error_body("authentication_error", message=...)``."""
    return {"type": "error", "error": {"type": kind, "message": message}}


def fault_error_body(status: int) -> dict[str, Any]:
    """The body of a scripted ``http_status`` fault (format shared with the script authors)."""
    return error_body("overloaded_error" if status == 529 else "api_error", message="scripted fault")


def estimate_tokens(body: Sequence[Any] | Mapping[str, Any]) -> int:
    """A rough token count for ``count_tokens`` (about four characters a token); never used for accounting."""
    return max(1, len(json.dumps(body)) // 4)
