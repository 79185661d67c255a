"""Usage summed from the parent-captured stream: every assistant message, subagents included.

Pure functions over parsed stream-json events (``sessions.parse_events``); no I/O. Owns what the
stream can and cannot tell about spend (measured on CLI 2.1.332, see ``transcript_usage``), so the
row's ``usage_transcripts`` means one documented thing. Unknown is ``None``, never 0.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from workflow_bench.usage import USAGE_FIELDS, sum_usage, unknown_usage

# The CLI's stand-in for a request that never produced a model message (e.g. "API Error: 529");
# it carries all-zero usage that no provider reported.
SYNTHETIC_MODEL = "<synthetic>"


def _message_usage(usage: object) -> dict[str, int | None]:
    if not isinstance(usage, Mapping):
        return unknown_usage()
    out: dict[str, int | None] = {}
    for name in USAGE_FIELDS:
        value = usage.get(name)
        out[name] = value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None
    return out


def _agent_results(events: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, int | None]]:
    """Agent tool results that carry their subagent's final-message usage, by the Agent call's id."""
    found: dict[str, dict[str, int | None]] = {}
    for event in events:
        result = event.get("tool_use_result")
        message = event.get("message")
        if event.get("type") != "user" or not isinstance(result, Mapping) or not isinstance(message, Mapping):
            continue
        blocks = [b for b in message.get("content") or [] if isinstance(b, Mapping)]
        ids = [b.get("tool_use_id") for b in blocks if b.get("type") == "tool_result"]
        if len(ids) == 1 and isinstance(ids[0], str) and isinstance(result.get("usage"), Mapping):
            found[ids[0]] = _message_usage(result["usage"])
    return found


def transcript_usage(events: Sequence[Mapping[str, Any]]) -> dict[str, int | None]:
    """Usage summed over every assistant message in the parent-captured stream, subagents included.

    The CLI emits one ``assistant`` event per content block, each repeating its message's usage,
    so events are grouped by ``message.id`` and each field takes the largest value any event of
    the message reported. Subagent messages (events with a ``parent_tool_use_id``) count like the
    main loop's: that is the spend ``result.usage`` leaves out.

    Measured on CLI 2.1.332, and why a value can be missing or ``None`` here:
    - a foreground Agent-tool subagent's *final* message (the one that becomes the tool result)
      is not emitted as an assistant event; its usage arrives instead as ``tool_use_result.usage``
      on the parent's tool_result event, and is counted from there (unless an assistant event
      under that Agent call already carried a text-only message with the same usage);
    - a forked skill (``context: fork``) subagent's final message appears nowhere in the parent
      stream, so with such skills the sum is a lower bound;
    - an assistant event carries the usage of its ``message_start``: the Anthropic API sends
      ``output_tokens`` there as a placeholder and the final count only in ``message_delta``,
      after the CLI has already emitted the event, so transcript output is a lower bound against
      a real API (the scripted provider declares its output in ``message_start`` as well);
    - through a LiteLLM gateway ``message_start`` carries all zeros (the real counts arrive in
      ``message_delta``), so a message whose input side (input + both cache fields) is 0 carries
      no usage report and makes every field unknown rather than a false 0;
    - ``<synthetic>`` messages (the CLI's own error stand-ins) are skipped: no model produced them.
    A message without an id cannot be deduplicated, so its usage is unknown. No messages at all
    is unknown too, never 0.
    """
    per_message: dict[str, dict[str, int | None]] = {}
    final_text: dict[str, list[dict[str, int | None]]] = {}  # Agent call id → text-only messages
    kinds: dict[str, set[str]] = {}
    parents: dict[str, str] = {}
    unknown = False
    for event in events:
        if event.get("type") != "assistant":
            continue
        message = event.get("message")
        if not isinstance(message, Mapping) or message.get("model") == SYNTHETIC_MODEL:
            continue
        message_id = message.get("id")
        usage = _message_usage(message.get("usage"))
        if not isinstance(message_id, str) or not message_id:
            unknown = True
            continue
        seen = per_message.setdefault(message_id, usage)
        for name in USAGE_FIELDS:
            old, new = seen[name], usage[name]
            seen[name] = None if old is None or new is None else max(old, new)
        blocks = message["content"] if isinstance(message.get("content"), list) else []
        kinds.setdefault(message_id, set()).update(
            str(b.get("type")) for b in blocks if isinstance(b, Mapping)
        )
        if isinstance(event.get("parent_tool_use_id"), str):
            parents[message_id] = event["parent_tool_use_id"]
    for message_id, parent in parents.items():
        if kinds[message_id] <= {"text", "thinking"}:  # every id in parents has its kinds
            final_text.setdefault(parent, []).append(per_message[message_id])
    for call_id, usage in _agent_results(events).items():
        if usage not in final_text.get(call_id, []):
            per_message[f"agent-result:{call_id}"] = usage
    if unknown or not per_message:
        return unknown_usage()
    for usage in per_message.values():
        inputs = [usage[n] for n in USAGE_FIELDS[:3]]
        if any(v is None for v in inputs) or sum(v or 0 for v in inputs) == 0:
            return unknown_usage()
    return sum_usage(per_message.values())
