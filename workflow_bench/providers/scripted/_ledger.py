"""What the scripted provider served, per minted key: the ground truth for accounting tests.

Owns ``LedgerEntry`` (one per ``POST /v1/messages`` from a known key) and ``Book``, the
provider's only mutable state: key → cell binding, session order, fault hit counts, ledger and
raw request counts, all behind one lock because the HTTP server answers on many threads.
It decides nothing about the wire; ``_server`` asks it for a ``Decision`` and sends that.
Everything stays in memory: request bodies are never written anywhere.
"""

from __future__ import annotations

import secrets
import threading
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from workflow_bench.providers.scripted._script import Cell, Fault, Script, Subagent, Turn, Usage

EXHAUSTED_TEXT = "(scripted provider: script exhausted)"


def unscripted_text(*, task: str, arm: str) -> str:
    return f"(scripted provider: no script for task={task} arm={arm})"


@dataclass(frozen=True, slots=True)
class LedgerEntry:
    """One served ``/v1/messages`` request.

    ``usage`` is what the turn *declared* (``None`` = declared unknown, sent as 0 where the wire
    needs a number). ``completed`` says whether a whole message went out: false for an error
    status or a scripted cut, so accounting sums only completed entries. (CLI 2.1.332 accepts a
    stream cut after ``message_delta``, i.e. without ``message_stop``, as a finished message; the
    entry still says ``completed: false`` because the provider did not send all of it.)
    ``stream`` is the request's ``stream`` flag: the CLI retries a broken stream and then falls
    back to one non-streaming request, which shows up here as ``stream: false``.
    ``subagent`` is the index of the subagent within its session (``None`` for the session's own
    loop); ``dialect`` is the wire the request came in on (``anthropic`` or ``openai-responses``).
    """

    task: str
    arm: str
    run: int
    session_index: int
    session_id: str | None
    subagent: int | None
    turn: int
    stream: bool
    status: int
    usage: Usage
    tool_calls: tuple[str, ...]
    exhausted: bool
    unscripted: bool
    fault: str | None
    completed: bool
    at: str
    dialect: str = "anthropic"

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict (usage nested as its four keys)."""
        return {
            "task": self.task,
            "arm": self.arm,
            "run": self.run,
            "session_index": self.session_index,
            "session_id": self.session_id,
            "subagent": self.subagent,
            "turn": self.turn,
            "stream": self.stream,
            "status": self.status,
            "usage": self.usage.to_json(),
            "tool_calls": list(self.tool_calls),
            "exhausted": self.exhausted,
            "unscripted": self.unscripted,
            "fault": self.fault,
            "completed": self.completed,
            "at": self.at,
            "dialect": self.dialect,
        }


@dataclass(frozen=True, slots=True)
class Binding:
    """The cell a minted key belongs to, with its script entry (``None`` = unscripted)."""

    task: str
    arm: str
    run: int
    cell: Cell | None


@dataclass(frozen=True, slots=True)
class Decision:
    """What to answer one request with: a scripted turn (or a placeholder text) and its fault."""

    binding: Binding
    session_index: int
    turn_index: int
    turn: Turn | None
    text: str | None
    fault: Fault | None
    entry: LedgerEntry


def _scripted(cell: Cell, session_index: int, subagent: int | None) -> Subagent | None:
    """The script a request is served from: its session, or one of that session's subagents."""
    if session_index >= len(cell.sessions):
        return None
    session = cell.sessions[session_index]
    if subagent is None:
        return session
    return session.subagents[subagent] if subagent < len(session.subagents) else None


@dataclass
class Book:
    """All mutable provider state. Every method takes the lock; callers never touch the fields."""

    script: Script
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _bindings: dict[str, Binding] = field(default_factory=dict)
    _sessions: dict[str, dict[str | None, int]] = field(default_factory=dict)
    _agents: dict[tuple[str, int], dict[str, int]] = field(default_factory=dict)
    _fault_hits: dict[tuple[str, int, int | None, int], int] = field(default_factory=dict)
    _ledger: dict[str, list[LedgerEntry]] = field(default_factory=dict)
    _all: list[LedgerEntry] = field(default_factory=list)
    _requests: dict[str, int] = field(default_factory=dict)

    def mint(self, *, task: str, arm: str, run: int) -> str:
        binding = Binding(task=task, arm=arm, run=run, cell=self.script.cell_for(task=task, arm=arm))
        with self._lock:
            while True:
                key = "sk-scripted-" + secrets.token_hex(16)
                if key not in self._bindings:
                    break
            self._bindings[key] = binding
            self._sessions[key] = {}
            self._ledger[key] = []
        return key

    def count_request(self, key: str) -> bool:
        """Count a raw request under its key; true when the key was minted here."""
        with self._lock:
            self._requests[key] = self._requests.get(key, 0) + 1
            return key in self._bindings

    def decide(
        self,
        *,
        key: str,
        session_id: str | None,
        turn_index: int,
        stream: bool,
        agent_id: str | None = None,
        dialect: str = "anthropic",
    ) -> Decision:
        """Pick the turn for a request; ``record`` it once it is about to be sent.

        Recording is a separate step so that a request still sleeping on a scripted ``delay_s``
        when its cell is cancelled (the client hung up) is never logged as served, nor counted
        in the cell's provider usage.

        ``agent_id`` (the ``x-claude-code-agent-id`` header) marks a subagent's request: it is
        served from the session's ``subagents`` list, in first-seen order of agent ids.
        """
        with self._lock:
            binding = self._bindings[key]
            sessions = self._sessions[key]
            session_index = sessions.setdefault(session_id, len(sessions))
            subagent: int | None = None
            if agent_id is not None:
                agents = self._agents.setdefault((key, session_index), {})
                subagent = agents.setdefault(agent_id, len(agents))
            turn: Turn | None = None
            text: str | None = None
            fault: Fault | None = None
            if binding.cell is None:
                text = unscripted_text(task=binding.task, arm=binding.arm)
            elif (
                script := _scripted(binding.cell, session_index, subagent)
            ) is not None and turn_index < len(turns := script.turns):
                turn = turns[turn_index]
                text = turn.text
                if turn.fault is not None:
                    slot = (key, session_index, subagent, turn_index)
                    hits = self._fault_hits[slot] = self._fault_hits.get(slot, 0) + 1
                    fault = turn.fault if turn.fault.times is None or hits <= turn.fault.times else None
            else:
                text = EXHAUSTED_TEXT
            status = fault.http_status if fault is not None and fault.http_status is not None else 200
            cut = fault is not None and fault.cut_after_events is not None
            entry = LedgerEntry(
                task=binding.task,
                arm=binding.arm,
                run=binding.run,
                session_index=session_index,
                session_id=session_id,
                subagent=subagent,
                turn=turn_index,
                stream=stream,
                status=status,
                usage=turn.usage if turn is not None else Usage(),
                tool_calls=tuple(c.name for c in turn.tool_calls) if turn is not None else (),
                exhausted=binding.cell is not None and turn is None,
                unscripted=binding.cell is None,
                fault=fault.describe() if fault is not None else None,
                completed=status == 200 and not cut,
                at=datetime.now(UTC).isoformat(timespec="milliseconds"),
                dialect=dialect,
            )
        return Decision(
            binding=binding,
            session_index=session_index,
            turn_index=turn_index,
            turn=turn,
            text=text,
            fault=fault,
            entry=entry,
        )

    def record(self, key: str, entry: LedgerEntry) -> None:
        """Log a decided request as served (called just before its reply is sent)."""
        with self._lock:
            self._ledger[key].append(entry)
            self._all.append(entry)

    def ledger(self, key: str) -> tuple[LedgerEntry, ...]:
        with self._lock:
            if key not in self._ledger:
                raise KeyError(f"key {key[:16]}… was not minted by this provider")
            return tuple(self._ledger[key])

    def all_ledger(self) -> tuple[LedgerEntry, ...]:
        with self._lock:
            return tuple(self._all)

    def request_count(self, key: str) -> int:
        with self._lock:
            return self._requests.get(key, 0)
