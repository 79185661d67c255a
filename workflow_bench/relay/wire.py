"""The relay's wire, parsed: what the CLI asked the model and what the model answered.

Owns two pure parsers the relay applies to every exchange it forwards:

- ``parse_request(body)`` → ``RequestFacts``: the model, the conversation as a tuple of message
  digests (normalized so the CLI's own re-serialization — a string vs. a one-text-block list,
  ``cache_control`` moving to the newest block, thinking blocks — does not count as a change),
  and the ``tool_result`` blocks it carries (id, error flag, content digest).
- ``parse_response(raw)`` → ``ResponseFacts``: the raw HTTP response (``Content-Length``,
  ``chunked`` or read-to-close; SSE or JSON) as one assistant message: its id, its provider
  usage (``message_start`` usage overridden field by field by ``message_delta`` usage), the
  ``tool_use`` blocks it requested, whether it completed, and the digest of the reply as the CLI
  must send it back.

Nothing here trusts the sandbox: a body that is not the shape we know yields facts marked
unparseable, never an exception. Callers: ``relay`` (capture) and ``evidence`` (cross-check).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from workflow_bench.usage import USAGE_FIELDS, unknown_usage

_DROPPED_BLOCK_KEYS = frozenset({"cache_control"})
MID_FRAME = "the stream ended mid-frame"
MAX_REPLY_TEXT = 64 * 1024  # a compaction summary is a few KiB; the record stays bounded
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
_IGNORED_BLOCK_TYPES = frozenset({"thinking", "redacted_thinking"})


@dataclass(frozen=True, slots=True)
class ToolUse:
    id: str
    name: str
    input: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class ToolResult:
    tool_use_id: str
    is_error: bool
    digest: str


@dataclass(frozen=True, slots=True)
class RequestFacts:
    """One ``POST /v1/messages`` body as the relay forwarded it."""

    model: str | None
    stream: bool | None
    messages: tuple[str, ...]
    """One digest per message, in order (roles included)."""
    first_user_texts: tuple[str, ...]
    """The text blocks of the first message (a subagent's prompt shows up here)."""
    tool_results: tuple[ToolResult, ...]
    parse_error: str | None = None


@dataclass(frozen=True, slots=True)
class ResponseFacts:
    """One upstream response, reduced to the assistant message it carried (if any)."""

    status: int | None
    message_id: str | None
    usage: Mapping[str, int | None]
    tool_uses: tuple[ToolUse, ...]
    completed: bool
    reply_digest: str | None
    """Digest of the assistant message the CLI must send back to continue this conversation."""
    parse_error: str | None = None
    text: str = ""
    """The reply's text blocks, joined, at most ``MAX_REPLY_TEXT`` characters (a compaction summary)."""


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _digest(value: Any) -> str:
    # A lone surrogate cannot survive the CLI's re-serialization: compare it as U+FFFD.
    text = _LONE_SURROGATE.sub("\ufffd", _canonical(value))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def normalize_content(content: Any) -> list[Any]:
    """The content of one message as the comparable list of blocks."""
    if isinstance(content, str):
        blocks: list[Any] = [{"type": "text", "text": content}]
    elif isinstance(content, list):
        blocks = list(content)
    else:
        return [content]
    out = []
    for block in blocks:
        if isinstance(block, dict):
            if block.get("type") in _IGNORED_BLOCK_TYPES:
                continue
            if block.get("type") == "text" and block.get("text") == "":
                continue
            if block.get("type") == "tool_use":
                # The CLI rewrites inputs it re-sends (measured: Bash drops a leading
                # "cd /workspace && "); the provider-minted id is what identifies the call.
                block = {k: block.get(k) for k in ("type", "id", "name")}
            block = {k: v for k, v in block.items() if k not in _DROPPED_BLOCK_KEYS}
        out.append(block)
    return out


def message_digest(role: Any, content: Any) -> str:
    return _digest([role, normalize_content(content)])


def _result_content_digest(block: Mapping[str, Any]) -> str:
    return _digest(normalize_content(block.get("content", "")))


def parse_request(body: bytes) -> RequestFacts:
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        return RequestFacts(None, None, (), (), (), parse_error=f"request body is not JSON: {exc}"[:200])
    if not isinstance(data, dict) or not isinstance(data.get("messages"), list):
        return RequestFacts(None, None, (), (), (), parse_error="request body has no messages list")
    model = data.get("model") if isinstance(data.get("model"), str) else None
    stream = data.get("stream") if isinstance(data.get("stream"), bool) else None
    digests, results = [], []
    for message in data["messages"]:
        if not isinstance(message, dict):
            return RequestFacts(model, stream, (), (), (), parse_error="a message is not an object")
        digests.append(message_digest(message.get("role"), message.get("content")))
        if message.get("role") != "user":
            continue
        for block in normalize_content(message.get("content")):
            if isinstance(block, dict) and block.get("type") == "tool_result":
                tool_id = block.get("tool_use_id")
                if isinstance(tool_id, str):
                    results.append(
                        ToolResult(tool_id, block.get("is_error") is True, _result_content_digest(block))
                    )
    first = data["messages"][0] if data["messages"] else {}
    texts = tuple(
        str(b["text"])
        for b in normalize_content(first.get("content"))
        if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)
    )
    return RequestFacts(model, stream, tuple(digests), texts, tuple(results))


# ── responses ──────────────────────────────────────────────────────────────


def _failed(status: int | None, error: str) -> ResponseFacts:
    return ResponseFacts(status, None, unknown_usage(), (), False, None, parse_error=error)


def split_http_response(raw: bytes) -> tuple[int | None, dict[str, str], bytes, str | None]:
    """Status, lower-cased headers, de-chunked body, and a problem (None when whole)."""
    head, sep, rest = raw.partition(b"\r\n\r\n")
    if not sep:
        return None, {}, b"", "response ended inside its headers"
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ", 2)
    try:
        status = int(parts[1])
    except (IndexError, ValueError):
        return None, {}, b"", "malformed status line"
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    if "chunked" in headers.get("transfer-encoding", "").lower():
        body, problem = _dechunk(rest)
        return status, headers, body, problem
    length = headers.get("content-length")
    if length is not None:
        if not length.isdigit():
            return status, headers, rest, "malformed Content-Length"
        if len(rest) < int(length):
            return status, headers, rest, "response body shorter than its Content-Length"
        return status, headers, rest[: int(length)], None
    return status, headers, rest, None  # read to close: whatever arrived is the body


def _dechunk(data: bytes) -> tuple[bytes, str | None]:
    chunks: list[bytes] = []
    pos = 0
    while True:
        end = data.find(b"\r\n", pos)
        if end < 0:
            return b"".join(chunks), "chunked body ended mid-chunk"
        size_text = data[pos:end].split(b";", 1)[0].strip()
        try:
            size = int(size_text, 16)
        except ValueError:
            return b"".join(chunks), "malformed chunk size"
        if size == 0:
            return b"".join(chunks), None
        start = end + 2
        if len(data) < start + size:
            chunks.append(data[start:])
            return b"".join(chunks), "chunked body ended mid-chunk"
        chunks.append(data[start : start + size])
        pos = start + size + 2


def parse_response(raw: bytes) -> ResponseFacts:
    status, headers, body, problem = split_http_response(raw)
    if status is None:
        return _failed(None, problem or "no status")
    if headers.get("content-encoding", "identity").lower() not in ("identity", ""):
        return _failed(status, f"compressed response ({headers['content-encoding']}) cannot be read")
    if status != 200:
        return ResponseFacts(status, None, unknown_usage(), (), False, None)
    if "text/event-stream" in headers.get("content-type", ""):
        facts = parse_sse(body)
    else:
        facts = parse_json_message(body)
    if problem:
        return ResponseFacts(
            status,
            facts.message_id,
            facts.usage,
            facts.tool_uses,
            False,
            facts.reply_digest,
            problem,
            facts.text,
        )
    return ResponseFacts(
        status,
        facts.message_id,
        facts.usage,
        facts.tool_uses,
        facts.completed,
        facts.reply_digest,
        facts.parse_error,
        facts.text,
    )


def _usage_from(source: Any, into: dict[str, int | None]) -> None:
    if not isinstance(source, dict):
        return
    for key in USAGE_FIELDS:
        value = source.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            into[key] = value


def _finish(
    status: int,
    message_id: Any,
    usage: dict[str, int | None],
    blocks: Sequence[Any],
    completed: bool,
    error: str | None = None,
) -> ResponseFacts:
    uses = []
    texts = [
        b["text"]
        for b in blocks
        if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)
    ]
    for block in blocks:
        if isinstance(block, dict) and block.get("type") == "tool_use":
            tool_id, name, inputs = block.get("id"), block.get("name"), block.get("input")
            if isinstance(tool_id, str) and isinstance(name, str):
                uses.append(ToolUse(tool_id, name, inputs if isinstance(inputs, dict) else {}))
    return ResponseFacts(
        status,
        message_id if isinstance(message_id, str) else None,
        usage,
        tuple(uses),
        completed,
        message_digest("assistant", list(blocks)),
        error,
        "".join(texts)[:MAX_REPLY_TEXT],
    )


def parse_json_message(body: bytes) -> ResponseFacts:
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        return _failed(200, f"JSON response is not JSON: {exc}"[:200])
    if not isinstance(data, dict) or data.get("type") != "message":
        return _failed(200, "JSON response is not a message")
    usage = unknown_usage()
    _usage_from(data.get("usage"), usage)
    content = data["content"] if isinstance(data.get("content"), list) else []
    return _finish(200, data.get("id"), usage, content, completed=True)


def sse_events(body: bytes) -> tuple[list[dict[str, Any]], str | None]:
    """``data:`` payloads of an SSE body; the problem says where a partial stream ended."""
    events: list[dict[str, Any]] = []
    text = body.decode("utf-8", "replace").replace("\r\n", "\n")
    frames = text.split("\n\n")
    tail = frames.pop()  # an unterminated last frame is not an event
    for frame in frames:
        data = "\n".join(line[5:].lstrip(" ") for line in frame.split("\n") if line.startswith("data:"))
        if not data:
            continue
        try:
            event = json.loads(data)
        except ValueError:
            return events, "an SSE data frame is not JSON"
        if isinstance(event, dict):
            events.append(event)
    return events, (MID_FRAME if tail.strip() else None)


def parse_sse(body: bytes) -> ResponseFacts:
    events, problem = sse_events(body)
    message_id: Any = None
    usage = unknown_usage()
    blocks: dict[int, dict[str, Any]] = {}
    partial_json: dict[int, list[str]] = {}
    saw_delta = False
    for event in events:
        kind = event.get("type")
        if kind == "message_start" and isinstance(event.get("message"), dict):
            message_id = event["message"].get("id")
            _usage_from(event["message"].get("usage"), usage)
        elif kind == "content_block_start" and isinstance(event.get("index"), int):
            block = event.get("content_block")
            blocks[event["index"]] = dict(block) if isinstance(block, dict) else {}
        elif kind == "content_block_delta" and isinstance(event.get("index"), int):
            _apply_delta(blocks.get(event["index"]), event.get("delta"), partial_json, event["index"])
        elif kind == "content_block_stop" and event.get("index") in partial_json:
            index = event["index"]
            try:
                blocks[index]["input"] = json.loads("".join(partial_json.pop(index)) or "{}")
            except (ValueError, KeyError):
                problem = problem or "a tool_use input is not JSON"
        elif kind == "message_delta":
            saw_delta = True
            _usage_from(event.get("usage"), usage)
        elif kind == "error":
            problem = problem or "the stream carried an error event"
    if message_id is None:
        return _failed(200, problem or "the stream has no message_start")
    ordered = []
    for index in sorted(blocks):
        block = blocks[index]
        if "_text_parts" in block:  # joined once: repeated += on a long reply would be quadratic
            parts = block.pop("_text_parts")
            block = {**block, "text": "".join(parts)}
        ordered.append(block)
    # CLI 2.1.332 accepts a stream cut after message_delta as a finished message (measured by the
    # scripted provider's fault tests), message_stop or not; so does this parser, as long as
    # nothing else was wrong (a cut inside the trailing message_stop frame is such a cut).
    completed = saw_delta and problem in (None, MID_FRAME)
    return _finish(200, message_id, usage, ordered, completed, None if completed else problem)


def _apply_delta(
    block: dict[str, Any] | None, delta: Any, partial_json: dict[int, list[str]], index: int
) -> None:
    if block is None or not isinstance(delta, dict):
        return
    kind = delta.get("type")
    if kind == "text_delta" and isinstance(delta.get("text"), str):
        block.setdefault("_text_parts", [str(block.get("text", ""))]).append(delta["text"])
    elif kind == "input_json_delta" and isinstance(delta.get("partial_json"), str):
        partial_json.setdefault(index, []).append(delta["partial_json"])
