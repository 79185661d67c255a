"""One session's trajectory: the redacted stream it printed, checked against the wire record.

The stream (``transcripts/…jsonl``) is the only place a tool call's input and output and the
model's text are kept, and it is agent-writable; the relay's wire record (``wire/…jsonl``) is of
record but keeps facts only (message ids, tool call ids and names, usage). So the page shows the
stream's content with the wire's facts beside it: each turn's tokens come from the wire when the
wire served that message (``usage_source: "wire"``), else from the stream, marked; a turn or tool
call the wire never saw is marked ``on_wire: false``; exchanges the wire saw but the stream does
not show (a failed request, a compaction, a forked skill's last reply) are listed as ``wire_only``.

Structure: the stream's assistant events (one content block each, grouped by message id) are the
turns, in order; tool results (user events) attach to their call; an event whose
``parent_tool_use_id`` names a call is a subagent's and nests under that call (``children``).
Every string goes through the cell's ``Budget``; past it, items are counted (``omitted_items``).

Per-turn cost is an estimate: the CLI reports cost per session only, so the session's cost is
apportioned over its turns by price-weighted tokens (``COST_WEIGHTS``, Anthropic's price ratios;
labelled as such on the page). Pure: bytes in, JSON-ready dicts out.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from workflow_bench.redaction import redact_value
from workflow_bench.usage import USAGE_FIELDS

from .text import Budget, as_text, visible

Json = dict[str, Any]
# Per-field character limits inside the cell budget. A tool output's first and last 6 KiB show
# what ran and how it ended (a test summary, an exit line); the raw transcript has the rest.
TEXT_CHARS = 16_000
INPUT_CHARS = 6_000
OUTPUT_CHARS = 8_000
NAME_CHARS = 128
ITEM_FRAME_BYTES = 160  # what an item's structure costs in the data file (ids, kinds, usage)
MAX_WIRE_ONLY = 200
# Anthropic list-price ratios of ordinary input : cache write (5 min) : cache read : output
# (every current Claude model: e.g. $3 / $3.75 / $0.30 / $15 per MTok). Only the ratios matter.
COST_WEIGHTS = {
    "input_tokens": 1.0,
    "cache_creation_input_tokens": 1.25,
    "cache_read_input_tokens": 0.1,
    "output_tokens": 5.0,
}
_SUBAGENT_TOOLS = frozenset({"agent", "task"})


def parse_jsonl(data: bytes) -> tuple[list[Json], int]:
    """The JSON objects of a JSON-lines text and how many non-blank lines were not one."""
    events: list[Json] = []
    bad = 0
    for line in data.decode("utf-8", errors="replace").split("\n"):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except ValueError:
            bad += 1
            continue
        if isinstance(value, dict):
            events.append(value)
        else:
            bad += 1
    return events, bad


def skill_name(inputs: Any) -> str | None:
    """The skill a ``Skill`` call asks for (``plan``, ``/plan args``, ``plugin:plan`` → ``plan``)."""
    if not isinstance(inputs, dict):
        return None
    for key in ("skill", "command", "name"):
        raw = inputs.get(key)
        if isinstance(raw, str) and raw.strip():
            return raw.strip().split()[0].lstrip("/").rsplit(":", 1)[-1] or None
    return None


def _usage(raw: Any) -> Json | None:
    if not isinstance(raw, dict):
        return None
    return {k: raw.get(k) if isinstance(raw.get(k), int) else None for k in USAGE_FIELDS}


def _weighted(usage: Mapping[str, Any] | None) -> float | None:
    if usage is None or any(not isinstance(usage.get(k), int) for k in USAGE_FIELDS):
        return None
    return float(sum(COST_WEIGHTS[k] * int(usage[k]) for k in USAGE_FIELDS))


def _result_text(content: Any) -> str:
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, dict) and block.get("type") == "text":
                parts.append(str(block.get("text", "")))
            elif isinstance(block, dict):
                parts.append(f"[{block.get('type', 'block')}]")
        return "\n".join(parts)
    return as_text(content) if content is not None else ""


class _Builder:
    def __init__(self, budget: Budget, wire: Sequence[Json]) -> None:
        self.budget = budget
        self.items: list[Json] = []
        self.omitted = 0
        self.turns: dict[tuple[str | None, str], Json] = {}
        self.calls: dict[str, Json] = {}
        self.wire_by_message: dict[str, Json] = {}
        self.wire_calls: set[str] = set()
        for line in wire:
            mid = line.get("message_id")
            if isinstance(mid, str):
                self.wire_by_message.setdefault(mid, line)
            for use in line.get("tool_uses") or ():
                if isinstance(use, list) and use and isinstance(use[0], str):
                    self.wire_calls.add(use[0])
        self.has_wire = bool(wire)
        self.stream_messages: set[str] = set()
        self.init: Json | None = None
        self.result: Json | None = None
        self.notes: list[str] = []

    def container(self, parent: Any) -> list[Json]:
        if isinstance(parent, str) and parent in self.calls:
            children: list[Json] = self.calls[parent]["children"]
            return children
        return self.items

    def add(self, where: list[Json], item: Json) -> bool:
        if not self.budget.charge(ITEM_FRAME_BYTES):
            self.omitted += 1
            return False
        where.append(item)
        return True

    def assistant(self, event: Json) -> None:
        message = event.get("message")
        if not isinstance(message, dict):
            return
        raw_parent = event.get("parent_tool_use_id")
        parent = raw_parent if isinstance(raw_parent, str) else None
        raw_id = message.get("id")
        mid: str = raw_id if isinstance(raw_id, str) else f"#{len(self.turns)}"
        self.stream_messages.add(mid)
        turn = self.turns.get((parent, mid))
        if turn is None:
            wire = self.wire_by_message.get(mid)
            usage = _usage(wire.get("usage")) if wire else _usage(message.get("usage"))
            turn = {
                "kind": "turn",
                "message_id": visible(mid)[:NAME_CHARS],
                "subagent_of": visible(parent)[:NAME_CHARS] if parent else None,
                "usage": usage,
                "usage_source": ("wire" if wire else "stream") if usage else None,
                "on_wire": (wire is not None) if self.has_wire else None,
                "cost_usd": None,
                "blocks": [],
            }
            if not self.add(self.container(parent), turn):
                return
            self.turns[(parent, mid)] = turn
        content = message.get("content")
        for block in content if isinstance(content, list) else ():
            if isinstance(block, dict):
                self.block(turn, block)

    def block(self, turn: Json, block: Json) -> None:
        kind = block.get("type")
        if kind == "text":
            piece = self.budget.take(str(block.get("text", "")), TEXT_CHARS)
            turn["blocks"].append({"kind": "text", "text": piece.text, "cut": piece.omitted})
        elif kind in ("thinking", "redacted_thinking"):
            turn["blocks"].append({"kind": "thinking"})
        elif kind == "tool_use":
            raw_id = block.get("id")
            call_id: str = raw_id if isinstance(raw_id, str) else ""
            name = str(block.get("name", ""))
            inputs = self.budget.take(as_text(block.get("input")), INPUT_CHARS)
            call: Json = {
                "kind": "tool",
                "id": visible(call_id)[:NAME_CHARS],
                "name": visible(name)[:NAME_CHARS],
                "skill": None,
                "subagent": name.lower() in _SUBAGENT_TOOLS,
                "input": inputs.text,
                "input_cut": inputs.omitted,
                "result": None,
                "result_cut": 0,
                "is_error": None,
                "on_wire": (call_id in self.wire_calls) if self.has_wire else None,
                "children": [],
            }
            if name.lower() == "skill":
                found = skill_name(block.get("input"))
                call["skill"] = visible(found)[:NAME_CHARS] if found else None
            if self.budget.charge(ITEM_FRAME_BYTES):
                turn["blocks"].append(call)
                if call_id:
                    self.calls.setdefault(call_id, call)
            else:
                self.omitted += 1

    def user(self, event: Json) -> None:
        message = event.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        parent = event.get("parent_tool_use_id")
        blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
        for block in blocks:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "tool_result":
                call = self.calls.get(str(block.get("tool_use_id")))
                if call is None:
                    self.notes.append("a tool result for a call the stream does not show")
                    continue
                piece = self.budget.take(_result_text(block.get("content")), OUTPUT_CHARS)
                call["result"], call["result_cut"] = piece.text, piece.omitted
                call["is_error"] = block.get("is_error") is True
            elif block.get("type") == "text" and block.get("text"):
                piece = self.budget.take(str(block.get("text")), TEXT_CHARS)
                item = {
                    "kind": "user",
                    "text": piece.text,
                    "cut": piece.omitted,
                    "synthetic": event.get("isSynthetic") is True,
                }
                self.add(self.container(parent), item)

    def system(self, event: Json) -> None:
        subtype = event.get("subtype")
        if subtype == "init":
            tools = event.get("tools")
            self.init = {
                "model": visible(str(event.get("model", "")))[:NAME_CHARS],
                "tools": [visible(str(t))[:NAME_CHARS] for t in tools[:64]]
                if isinstance(tools, list)
                else [],
            }
        elif subtype == "api_retry":
            self.notes.append(
                visible(
                    f"API retry {event.get('attempt')}/{event.get('max_retries')} "
                    f"(status {event.get('error_status')})"
                )[:200]
            )
        elif subtype == "compact_boundary":
            self.notes.append("the CLI compacted the conversation here")

    def finish(self, event: Json) -> None:
        text = self.budget.take(str(event.get("result", "") or ""), TEXT_CHARS)
        cost = event.get("total_cost_usd")
        self.result = {
            "subtype": visible(str(event.get("subtype", "")))[:NAME_CHARS],
            "is_error": event.get("is_error") is True,
            "num_turns": event.get("num_turns") if isinstance(event.get("num_turns"), int) else None,
            "duration_ms": event.get("duration_ms") if isinstance(event.get("duration_ms"), int) else None,
            "cost_usd": cost if isinstance(cost, int | float) and not isinstance(cost, bool) else None,
            "text": text.text,
            "cut": text.omitted,
        }


def _all_turns(items: Sequence[Json]) -> list[Json]:
    out: list[Json] = []
    stack = list(reversed(items))
    while stack:
        item = stack.pop()
        if item["kind"] == "turn":
            out.append(item)
            for block in reversed(item["blocks"]):
                if block["kind"] == "tool":
                    stack.extend(reversed(block["children"]))
    return out


def _apportion(turns: Sequence[Json], cost: float | None) -> None:
    """Each turn's share of the session cost by price-weighted tokens (all known, else none)."""
    weights = [_weighted(t["usage"]) for t in turns]
    if cost is None or not turns or any(w is None for w in weights):
        return
    total = sum(w for w in weights if w is not None)
    if total <= 0:
        return
    for turn, weight in zip(turns, weights, strict=True):
        turn["cost_usd"] = round(cost * (weight or 0.0) / total, 6)


def _wire_only(builder: _Builder, wire: Sequence[Json]) -> list[Json]:
    out: list[Json] = []
    for line in wire:
        mid = line.get("message_id")
        if isinstance(mid, str) and mid in builder.stream_messages:
            continue
        if len(out) >= MAX_WIRE_ONLY:
            break
        names = [u[1] for u in line.get("tool_uses") or () if isinstance(u, list) and len(u) > 1]
        out.append(
            {
                "request": line.get("request") if isinstance(line.get("request"), int) else None,
                "status": line.get("status") if isinstance(line.get("status"), int) else None,
                "agent_id": visible(str(line["agent_id"]))[:NAME_CHARS] if line.get("agent_id") else None,
                "completed": line.get("completed") is True,
                "accepted": line.get("accepted") is True,
                "tool_uses": [visible(str(n))[:NAME_CHARS] for n in names[:32]],
                "usage": _usage(line.get("usage")),
            }
        )
    return out


def session_trajectory(
    stream: bytes | None, wire: Sequence[Json], budget: Budget, *, stream_truncated: bool = False
) -> Json:
    """``{init, result, items, omitted_items, wire_only, notes, stream_lines_unreadable}`` of one session."""
    builder = _Builder(budget, wire)
    events, bad = parse_jsonl(stream) if stream is not None else ([], 0)
    for raw in events:
        event = redact_value(raw)
        kind = event.get("type")
        if kind == "assistant":
            builder.assistant(event)
        elif kind == "user":
            builder.user(event)
        elif kind == "system":
            builder.system(event)
        elif kind == "result":
            builder.finish(event)
    if stream_truncated:
        builder.notes.append("the transcript is larger than the viewer reads; its tail is not shown")
    cost = builder.result["cost_usd"] if builder.result else None
    _apportion(_all_turns(builder.items), cost)
    return {
        "init": builder.init,
        "result": builder.result,
        "items": builder.items,
        "omitted_items": builder.omitted,
        "wire_only": _wire_only(builder, wire),
        "notes": builder.notes[:50],
        "stream_lines_unreadable": bad,
    }
