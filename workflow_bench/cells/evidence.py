"""Evidence of record for one session: the relay's wire record, the CLI's stream checked against it.
Over 400 lines on purpose: the thread rules (retry, replay, subagent, compaction) read one record together.
(DESIGN §4 "Evidence has a trust level".)

The agent controls its tools' processes and could append events to the CLI's stdout; it cannot
touch the relay, which runs on the host. So usage, tool counts and skill evidence come from the
wire, and the stream is a second view: any disagreement makes the session ``evidence-tampered``.

Conversation threads. Every request must continue one the session already had: its messages
start with an earlier request's messages plus that request's reply (or repeat an earlier request
exactly: a retry, allowed only while no earlier copy got its reply delivered whole — the CLI
retries a failed request, never an answered one, so repeating an answered one is a replay). A
request that continues nothing may only open the session (the first request)
or a subagent (a new ``x-claude-code-agent-id`` while an Agent or Skill call the model made is
still unanswered; for Agent, the subagent's first message must carry that call's prompt).
Anything else is a conversation the model never had — e.g. a tool process talking to the relay.

Compaction (measured on CLI 2.1.332 with its auto-compact threshold lowered): the CLI sends the
conversation plus a "summarize" message, gets a text-only reply nobody continues, then opens a
new conversation whose first message quotes that summary. That new conversation is the old one
continued: it joins the thread of the compaction request when its first message carries the
text (or the ``<summary>`` part) of such a reply — completed, delivered whole, text only, under
the same agent, to a request that itself continued the thread, not continued since — each reply
once. The compaction exchange is spend (``usage_wire``), never part of what the CLI reports.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from workflow_bench.judging.outcomes import ErrorKind
from workflow_bench.redaction import printable
from workflow_bench.relay.server import Exchange, WireRecord
from workflow_bench.relay.wire import ToolResult, ToolUse
from workflow_bench.usage import USAGE_FIELDS, sum_usage

from .sessions import SessionOutcome
from .skill_evidence import TOOL_NAME_CHARS, skill_evidence
from .wire_cost import served_cost

_AGENT_TOOLS = frozenset({"agent", "task"})  # Task: the Agent tool's earlier name
# The first line of a forked skill's subagent prompt (CLI 2.1.332, measured): "<this><skill dir>".
FORK_OPENING = "Base directory for this skill: "
_SUMMARY_BLOCK = re.compile(r"<summary>(.*?)</summary>", re.DOTALL)
MIN_SUMMARY_CHARS = 16  # a shorter quote proves nothing


@dataclass(frozen=True, slots=True)
class SubagentPolicy:
    """What may open a subagent thread in one session: the arm's tools and the forked skills."""

    agent_tool: bool = True
    """The session has the Agent tool (every built-in arm does: ``arms.AGENT_TOOLS``)."""
    forked_skills: frozenset[str] = frozenset()
    """Lower-case names of the skills the session may invoke that declare ``context: fork``."""


@dataclass(frozen=True, slots=True)
class WireEvidence:
    """What the wire proves about one session. Unknown values are None, never 0."""

    exchanges: int
    refused: int
    usage: Mapping[str, int | None]
    """Every completed message, subagents included, each message id once: the provider's spend."""
    usage_main: Mapping[str, int | None]
    """The main conversation's accepted messages: what the CLI's result event must report."""
    tool_use_counts: Mapping[str, int]
    tool_uses: Mapping[str, ToolUse]
    tool_results: Mapping[str, ToolResult]
    main_tool_use_ids: tuple[str, ...]
    turns: int
    tampering: tuple[str, ...] = ()
    usage_foreign: Mapping[str, int | None] = field(default_factory=dict)
    """Served to threads no spawning call opened (empty when none): spend the CLI never priced."""
    unverifiable: tuple[str, ...] = ()
    summary: tuple[Mapping[str, Any], ...] = field(default_factory=tuple)
    forks: int = 0
    """Requests that forked a conversation beyond what the CLI's own retries produce (``_forks``)."""
    served: tuple[tuple[str | None, Mapping[str, int | None]], ...] = ()
    """(model, usage) of every exchange ``usage`` sums: each one the provider served, to be priced."""

    def skill_invoked(self, expected: str) -> bool:
        """The model requested Skill(expected) and a request carried a non-error result for it."""
        for tool_id, use in self.tool_uses.items():
            if use.name.lower() != "skill" or _skill_name(use.input) != expected.lower():
                continue
            result = self.tool_results.get(tool_id)
            if result is not None and not result.is_error:
                return True
        return False

    def skills_invoked(self) -> tuple[str, ...]:
        """Every skill the model requested and got a non-error result for, sorted (bounded names)."""
        names = {
            printable(name, TOOL_NAME_CHARS)
            for tool_id, use in self.tool_uses.items()
            if use.name.lower() == "skill"
            and (name := _skill_name(use.input)) is not None
            and (result := self.tool_results.get(tool_id)) is not None
            and not result.is_error
        }
        return tuple(sorted(names)[:MAX_SKILL_NAMES])


MAX_SKILL_NAMES = 64  # a session invoking more distinct skills than this is noise; the row stays small


def _skill_name(inputs: Mapping[str, Any]) -> str | None:
    for key in ("skill", "command", "name"):
        raw = inputs.get(key)
        if isinstance(raw, str) and raw.strip():
            return raw.strip().split()[0].lstrip("/").rsplit(":", 1)[-1].lower() or None
    return None


def analyse(record: WireRecord, policy: SubagentPolicy | None = None) -> WireEvidence:
    """Threads, usage, tool calls and results of one session's wire record (pure).

    ``policy``: what may spawn a subagent (default: the Agent tool, no forked skill).
    """
    policy = policy or SubagentPolicy()
    tampering: list[str] = []
    unverifiable: list[str] = []
    if record.overflow:
        unverifiable.append("the wire record exceeded its exchange cap")
    exchanges = record.exchanges
    thread_of: dict[int, int] = {}
    by_messages: dict[tuple[str, ...], int] = {}
    answered: dict[tuple[str, ...], int] = {}  # messages -> a request whose reply reached the CLI whole
    by_continuation: dict[tuple[str, ...], int] = {}
    consumed: set[int] = set()
    tool_uses: dict[str, ToolUse] = {}
    tool_results: dict[str, ToolResult] = {}
    anchors_used: set[str] = set()
    agents_seen: set[str] = set()
    thread_agent: dict[int, str | None] = {}
    summaries: dict[int, tuple[str, ...]] = {}  # candidate compaction replies: index -> quotable texts
    compacted: set[int] = set()
    foreign: set[int] = set()  # threads that started as a conversation the session never had
    continuations: dict[int, list[int]] = {}  # a reply -> the distinct requests continuing it
    for exchange in exchanges:
        i, request = exchange.index, exchange.request
        if request.messages in answered:
            tampering.append(
                f"request {i} repeats request {answered[request.messages]}, whose reply was delivered "
                "whole (a replay: the CLI retries only a failed request)"
            )
        parent = by_messages.get(request.messages)
        if parent is None:
            for k in range(len(request.messages) - 1, 0, -1):
                parent = by_continuation.get(request.messages[: k + 1])
                if parent is not None:
                    consumed.add(parent)
                    continuations.setdefault(parent, []).append(i)
                    break
        anchor = (
            None
            if parent is not None
            else _compaction_anchor(exchange, summaries, consumed, thread_agent, thread_of)
        )
        if parent is not None:
            thread_of[i] = thread_of[parent]
            if exchange.agent_id != thread_agent[thread_of[i]]:
                tampering.append(f"request {i} continues a conversation under another agent id")
        elif anchor is not None:
            thread_of[i] = thread_of[anchor]  # the compacted conversation, continued
            compacted.add(anchor)
            del summaries[anchor]
        else:
            thread_of[i] = i
            thread_agent[i] = exchange.agent_id
            problem = _new_thread_problem(
                exchange, i == exchanges[0].index, tool_uses, tool_results, anchors_used, agents_seen, policy
            )
            if problem:
                tampering.append(problem)
                foreign.add(i)
        if exchange.agent_id:
            agents_seen.add(exchange.agent_id)
        by_messages.setdefault(request.messages, i)
        for result in request.tool_results:
            if result.tool_use_id not in tool_uses:
                tampering.append(
                    f"request {i} answers tool call {printable(result.tool_use_id, 64)} the model never made"
                )
                continue
            first = tool_results.setdefault(result.tool_use_id, result)
            if first.is_error != result.is_error:
                tampering.append(
                    f"request {i} re-answers {printable(result.tool_use_id, 64)} with another error flag"
                )
        response = exchange.response
        if exchange.response_overflow:
            unverifiable.append(f"response {i} exceeded the record cap")
        if response.status == 200 and response.parse_error:
            unverifiable.append(f"response {i}: {response.parse_error}")
        if response.reply_digest is not None and response.completed:
            if exchange.delivered and request.messages:
                answered.setdefault(request.messages, i)
                if parent is not None and not response.tool_uses and (quotes := _quotable(response.text)):
                    summaries[i] = quotes
            by_continuation.setdefault((*request.messages, response.reply_digest), i)
            for use in response.tool_uses:
                if use.id in tool_uses:
                    tampering.append(f"response {i} repeats tool call id {printable(use.id, 64)}")
                tool_uses.setdefault(use.id, use)
    forks = _forks(exchanges, continuations, answered)
    tampering += forks
    evidence = _evidence(
        record, thread_of, consumed - compacted, tool_uses, tool_results, tampering, unverifiable, compacted
    )
    return replace(evidence, usage_foreign=_foreign_usage(exchanges, thread_of, foreign), forks=len(forks))


def _forks(exchanges, continuations: Mapping[int, list[int]], answered) -> list[str]:
    """Requests continuing a reply that an earlier, different request continued and got answered.

    The CLI continues a reply once; it sends a different continuation of the same reply only after
    the earlier one failed or was cut (e.g. a 400 for a prompt too long, then a compaction), and a
    retry repeats the very request (a thread's own copy, never a continuation). A tool that replays
    the CLI's bytes can fork the conversation any number of times: each fork is served spend the
    CLI never continues (all of it is priced: ``cells.wire_cost``) and is counted here."""
    by_index = {exchange.index: exchange for exchange in exchanges}
    found = []
    for parent, children in continuations.items():
        for n, child in enumerate(children[1:], start=1):
            earlier = next((c for c in children[:n] if by_index[c].request.messages in answered), None)
            if earlier is not None:
                found.append(
                    f"request {child} forks the conversation at reply {parent}: request {earlier} "
                    "continued it already and got its reply whole (the CLI continues a reply once)"
                )
    return found


def _foreign_usage(exchanges, thread_of, foreign: set[int]) -> dict[str, int | None]:
    """What the provider served to threads no spawning call opened (each message id once)."""
    if not foreign:
        return {}
    seen: set[str] = set()
    served = []
    for exchange in exchanges:
        response = exchange.response
        if thread_of[exchange.index] not in foreign or response.status != 200:
            continue
        if response.completed and (response.message_id or f"#{exchange.index}") in seen:
            continue
        seen.add(response.message_id or f"#{exchange.index}")
        served.append(dict(response.usage))
    return sum_usage(served)


def _quotable(text: str) -> tuple[str, ...]:
    """What of a reply a post-compaction first message quotes: the whole text, or its summary."""
    found = [text.strip(), *(m.strip() for m in _SUMMARY_BLOCK.findall(text))]
    return tuple(t for t in dict.fromkeys(found) if len(t) >= MIN_SUMMARY_CHARS)


def _compaction_anchor(exchange, summaries, consumed, thread_agent, thread_of) -> int | None:
    """The compaction reply this new conversation continues from, if any (see the module doc)."""
    opening = "\n".join(exchange.request.first_user_texts)
    for index, quotes in summaries.items():
        if index in consumed or thread_agent[thread_of[index]] != exchange.agent_id:
            continue
        if any(quote in opening for quote in quotes):
            return index
    return None


def _new_thread_problem(
    exchange: Exchange,
    first: bool,
    tool_uses: Mapping[str, ToolUse],
    tool_results: Mapping[str, ToolResult],
    anchors_used: set[str],
    agents_seen: set[str],
    policy: SubagentPolicy,
) -> str | None:
    if first and exchange.agent_id is None:
        return None
    if exchange.agent_id and exchange.agent_id not in agents_seen:
        for tool_id, use in tool_uses.items():
            if tool_id in anchors_used or tool_id in tool_results:
                continue
            if _spawned_by(use, exchange.request.first_user_texts, policy):
                anchors_used.add(tool_id)
                return None
    return f"request {exchange.index} starts a conversation the session never had"


def _spawned_by(use: ToolUse, first_texts: tuple[str, ...], policy: SubagentPolicy) -> bool:
    """Whether the unanswered call ``use`` is one that spawned a subagent opening with ``first_texts``."""
    name = use.name.lower()
    if name in _AGENT_TOOLS:
        prompt = use.input.get("prompt")
        return policy.agent_tool and isinstance(prompt, str) and prompt in first_texts
    if name != "skill":
        return False
    skill = _skill_name(use.input)
    if skill is None or skill not in policy.forked_skills or not first_texts:
        return False
    opening = first_texts[0].partition("\n")[0]
    if not opening.startswith(FORK_OPENING):
        return False
    return opening[len(FORK_OPENING) :].rstrip("/").rsplit("/", 1)[-1].lower() == skill


def _evidence(
    record, thread_of, consumed, tool_uses, tool_results, tampering, unverifiable, compacted=frozenset()
):
    exchanges = record.exchanges
    main = thread_of[exchanges[0].index] if exchanges else None
    last_in_thread: dict[int, int] = {}
    for exchange in exchanges:
        if exchange.response.completed:
            last_in_thread[thread_of[exchange.index]] = exchange.index
    # Accepted: a reply the CLI continued from, or the last one of its conversation. A reply
    # that was retried away is spend (usage_wire) but not part of what the CLI reports.
    accepted = (set(consumed) | set(last_in_thread.values())) - set(compacted)
    seen_ids: set[str] = set()
    spend, main_usage, summary, served, cut_main = [], [], [], [], []
    counts: dict[str, int] = {}
    main_ids: list[str] = []
    for exchange in exchanges:
        response, i = exchange.response, exchange.index
        if response.status == 200 and not response.completed:
            spend.append(dict(response.usage))  # a cut stream may still be billed: its usage stays
            served.append((exchange.request.model, dict(response.usage)))
            if thread_of[i] == main and response.message_id is not None:
                # CLI 2.1.332 adds a message's usage to its result once message_start arrives
                # (measured: a stream cut right after it, then retried, is in result.usage twice).
                cut_main.append(dict(response.usage))
        if response.completed and response.message_id not in seen_ids:
            seen_ids.add(response.message_id or f"#{i}")
            spend.append(dict(response.usage))
            served.append((exchange.request.model, dict(response.usage)))
        if response.completed and i in accepted:
            for use in response.tool_uses:
                name = printable(use.name, TOOL_NAME_CHARS)  # model output: bounded and escaped
                counts[name] = counts.get(name, 0) + 1
            if thread_of[i] == main:
                main_usage.append(dict(response.usage))
                main_ids += [u.id for u in response.tool_uses]
        summary.append(
            {
                "request": i,
                "thread": thread_of[i],
                "agent_id": _bounded(exchange.agent_id),
                "model": _bounded(exchange.request.model),
                "messages": len(exchange.request.messages),
                "tool_results": [
                    [_bounded(r.tool_use_id), r.is_error] for r in exchange.request.tool_results
                ],
                "status": response.status,
                "message_id": _bounded(response.message_id),
                "completed": response.completed,
                "accepted": i in accepted,
                "usage": dict(response.usage),
                "tool_uses": [
                    [_bounded(u.id), printable(u.name, TOOL_NAME_CHARS)] for u in response.tool_uses
                ],
            }
        )
    return WireEvidence(
        exchanges=len(exchanges),
        refused=record.refused,
        usage=sum_usage(spend),
        usage_main=sum_usage(main_usage + cut_main),
        tool_use_counts=dict(sorted(counts.items())),
        tool_uses=tool_uses,
        tool_results=tool_results,
        main_tool_use_ids=tuple(main_ids),
        turns=len(main_usage),
        tampering=tuple(dict.fromkeys(tampering)),
        unverifiable=tuple(dict.fromkeys(unverifiable)),
        summary=tuple(summary),
        served=tuple(served),
    )


# ── the stream, checked against the wire ───────────────────────────────────


def _usage_agrees(stream: Mapping[str, Any], wire: Mapping[str, Any]) -> bool:
    """Every count the wire reported matches; one the wire never reported, the CLI reads as zero."""
    return all(
        stream.get(field) == wire.get(field)
        if wire.get(field) is not None
        else stream.get(field) in (None, 0)
        for field in USAGE_FIELDS
    )


def cross_check(wire: WireEvidence, events: Sequence[Mapping[str, Any]]) -> list[str]:
    """Every disagreement between the CLI's stream (second view) and the wire (of record)."""
    problems: list[str] = []
    results = [e for e in events if e.get("type") == "result"]
    if len(results) > 1:
        problems.append(f"the stream carries {len(results)} result events; a session prints one")
    # The CLI reports zeros when nothing was served (e.g. every request got a 529).
    expected = dict(wire.usage_main) if wire.turns else dict.fromkeys(USAGE_FIELDS, 0)
    for result in results:
        usage = _stream_usage(result)
        if not _usage_agrees(usage, expected):
            problems.append(f"the stream's result usage {usage} disagrees with the wire's {expected}")
    stream_uses: set[str] = set()
    for event in events:
        kind = event.get("type")
        message = event.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        if kind == "assistant" and isinstance(message, dict):
            blocks = content if isinstance(content, list) else []
            for block in blocks:
                if not isinstance(block, dict) or block.get("type") != "tool_use":
                    continue
                tool_id = block.get("id")
                use = wire.tool_uses.get(tool_id) if isinstance(tool_id, str) else None
                if use is None or use.name != block.get("name"):
                    problems.append(
                        f"the stream shows tool call {printable(tool_id, 64)} the model never made"
                    )
                else:
                    stream_uses.add(use.id)
        elif kind == "user" and isinstance(content, list):
            for block in content:
                if not isinstance(block, dict) or block.get("type") != "tool_result":
                    continue
                tool_id = block.get("tool_use_id")
                if not isinstance(tool_id, str) or tool_id not in wire.tool_uses:
                    problems.append(
                        f"the stream answers tool call {printable(tool_id, 64)} the model never made"
                    )
                    continue
                sent = wire.tool_results.get(tool_id)
                if sent is not None and sent.is_error != (block.get("is_error") is True):
                    problems.append(
                        f"the stream's result for {printable(tool_id, 64)} disagrees with the one sent"
                    )
    for tool_id in wire.main_tool_use_ids:
        if tool_id not in stream_uses:
            problems.append(f"the stream omits tool call {printable(tool_id, 64)} the model made")
    return list(dict.fromkeys(problems))


def _stream_usage(result: Mapping[str, Any]) -> dict[str, Any]:
    usage = result.get("usage")
    return {key: usage.get(key) for key in USAGE_FIELDS} if isinstance(usage, dict) else {}


# ── the session outcome, re-derived from the wire ──────────────────────────

_STREAM_SUCCESS_KINDS = (None, ErrorKind.SKILL_NOT_INVOKED, ErrorKind.EVIDENCE_UNVERIFIED)
MAX_DETAIL_PROBLEMS = 5


def apply_wire(
    outcome: SessionOutcome,
    record: WireRecord,
    *,
    expected_skill: str | None,
    policy: SubagentPolicy | None = None,
) -> SessionOutcome:
    """The session's row facts from the wire; the stream only cross-checked (pure).

    ``policy``: what may spawn a subagent in this session (default: the Agent tool only, so a
    forked skill's subagent reads as tampering unless the caller names it: fails closed).
    """
    wire = analyse(record, policy)
    problems = list(wire.tampering)
    if any(wire.usage_foreign.values()):
        problems.insert(1, f"the provider served threads the CLI never opened: {dict(wire.usage_foreign)}")
    stream_skill = None
    if outcome.events:
        problems += cross_check(wire, outcome.events)
        if expected_skill is not None:
            stream_skill, _ = skill_evidence(outcome.events, expected_skill)
    elif _foreign_bytes(outcome):
        problems.append("the stream carries bytes the CLI does not print (not JSON lines)")
    if record.refused and outcome.error_kind == ErrorKind.SESSION_ERROR:
        # The CLI never sends what the relay refuses (measured); a session that then failed was
        # failed from inside (e.g. a connection flood starving the CLI): never an outage.
        problems.append(f"the relay refused {record.refused} request(s) from inside the sandbox")
    if record.refused_peer:
        # The key left the CLI: a process inside the sandbox held it (relay/server.py _check_peer).
        problems.append(
            f"the relay refused {record.refused_peer} keyed request(s) from a process other than the CLI"
        )
    invoked = wire.skill_invoked(expected_skill) if expected_skill is not None else None
    if stream_skill is True and invoked is False:
        problems.append(f"the stream shows skill {expected_skill} invoked; the wire does not")
    common: dict[str, Any] = {
        "usage": dict(wire.usage_main),
        "usage_wire": dict(wire.usage),
        "tool_use_counts": dict(wire.tool_use_counts),
        "relay_refused": record.refused,
        "relay_forked": wire.forks,
        "relay_upstream_retries": sum(1 for exchange in record.exchanges if exchange.retried),
        "wire_summary": wire.summary,
        "skills_invoked": wire.skills_invoked(),
        # Every served exchange priced, whatever its thread; the CLI's own total leaves out what it
        # never continued (forks, retried-away replies, threads it never opened).
        "cost_usd": served_cost(wire.served, outcome.events, overflow=record.overflow),
        "events": (),  # the cross-check is done; do not carry the stream further
    }
    if problems and outcome.error_kind != ErrorKind.CANCELLED:
        return replace(
            outcome,
            ok=False,
            error_kind=ErrorKind.EVIDENCE_TAMPERED,
            error_detail="; ".join(problems[:MAX_DETAIL_PROBLEMS]),
            skill_invoked=invoked,
            transcript_missing=False,
            diagnostics=(*outcome.diagnostics, *problems),
            **common,
        )
    if outcome.error_kind not in _STREAM_SUCCESS_KINDS:
        # A failed session measured nothing: its row usage stays unknown (the stream's None), while
        # usage_wire keeps what was really served.
        return replace(outcome, **{**common, "usage": outcome.usage})
    if wire.unverifiable:
        return replace(
            outcome,
            ok=False,
            error_kind=ErrorKind.EVIDENCE_UNVERIFIED,
            error_detail="; ".join(wire.unverifiable[:MAX_DETAIL_PROBLEMS]),
            skill_invoked=None,
            transcript_missing=True,
            diagnostics=(*outcome.diagnostics, *wire.unverifiable),
            **common,
        )
    kind = ErrorKind.SKILL_NOT_INVOKED if invoked is False else None
    return replace(
        outcome,
        ok=kind is None,
        error_kind=kind,
        error_detail=None,
        skill_invoked=invoked,
        transcript_missing=False,
        **common,
    )


def _foreign_bytes(outcome: SessionOutcome) -> bool:
    """The CLI exited 0, yet its stream is not JSON lines: someone else wrote to it.

    Exit 0 only: a CLI killed mid-line (a memory cap, a signal) legitimately leaves a cut line.
    """
    detail = outcome.error_detail if isinstance(outcome.error_detail, dict) else {}
    problem = str(detail.get("event_stream_error") or "")
    return (
        detail.get("process_state") == "exited"
        and detail.get("returncode") == 0
        and any(
            marker in problem for marker in ("is not JSON", "not UTF-8", "is not a JSON object", "non-finite")
        )
    )


def _bounded(value: str | None) -> str | None:
    """Ids and names on the wire come from the sandbox or the model: bounded and escaped."""
    return None if value is None else printable(value, TOOL_NAME_CHARS)


def wire_lines(summary: Sequence[Mapping[str, Any]]) -> bytes:
    """The per-session wire record artifact: one JSON line per exchange (facts only, no bodies)."""
    return "".join(json.dumps(line, sort_keys=True) + "\n" for line in summary).encode()
