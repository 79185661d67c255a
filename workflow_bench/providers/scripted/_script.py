"""The scripted provider's script model: frozen dataclasses that validate themselves.

Owns the meaning of the format shared with the demo-script authors (``schema_version: 1``):
which cell (task × arm, fnmatch globs, first match wins) gets which sessions, and per session the
ordered turns (text, tool calls, declared usage, fault). Every value is checked when its
dataclass is built, so the server trusts a ``Script`` without re-checking it. Reading YAML lives
in ``_load``; this module does no I/O.

Errors are ``ScriptError``. A constructor only knows the key it rejected; ``_load`` adds the
file, the cell (index and match) and the key path above it, so a message reads
``demo.yaml: cells[2] match={task: 'bug-*'}: sessions[0].turns[1].usage.input_tokens: ...``.
"""

from __future__ import annotations

import fnmatch
import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

from workflow_bench.usage import USAGE_FIELDS

SCHEMA_VERSION = 1
CWD_TOKEN = "{cwd}"
"""The only placeholder: exactly this token is replaced, any other brace is left alone because
scripts write Python and JSON source whose braces must survive untouched."""


class ScriptError(ValueError):
    """A script that cannot be served. Names the file, the cell and the key that is wrong."""

    def __init__(self, message: str, *, key: str = "", source: str | None = None, where: str | None = None):
        self.message = message
        self.key = key
        self.source = source
        self.where = where
        parts = [p for p in (source, where, key) if p]
        super().__init__(": ".join([*parts, message]))

    def located(self, *, source: str, where: str) -> ScriptError:
        """The same error with the file and the cell (or ``top level``) filled in."""
        return ScriptError(self.message, key=self.key, source=source, where=where)


def fail(key: str, message: str) -> ScriptError:
    """A ``ScriptError`` that only knows its key; the loader adds where it is."""
    return ScriptError(message, key=key)


def _count(value: object, key: str) -> int:
    # bool is an int subclass; `true` as a token count is a typo, never a number.
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise fail(key, f"want a non-negative int, got {value!r}")
    return value


@dataclass(frozen=True, slots=True)
class Usage:
    """Token usage a turn declares. ``None`` means "declared unknown", never zero."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_creation_input_tokens: int | None = None
    cache_read_input_tokens: int | None = None

    def __post_init__(self) -> None:
        for name in USAGE_FIELDS:
            value = getattr(self, name)
            if value is not None:
                _count(value, name)

    def to_json(self) -> dict[str, int | None]:
        return {name: getattr(self, name) for name in USAGE_FIELDS}


@dataclass(frozen=True, slots=True)
class Fault:
    """A scripted failure for one turn.

    ``http_status`` answers with that status and an Anthropic error body; ``cut_after_events``
    sends that many SSE events and then resets the connection; ``delay_s`` sleeps before
    answering and may be combined with either. ``times`` bounds how many requests hitting the
    turn (per minted key) get the fault; ``None`` means every one, after which the turn is served
    normally.
    """

    http_status: int | None = None
    cut_after_events: int | None = None
    delay_s: float | None = None
    times: int | None = None

    def __post_init__(self) -> None:
        if self.http_status is None and self.cut_after_events is None and self.delay_s is None:
            raise fail("", "want at least one of http_status, cut_after_events, delay_s")
        if self.http_status is not None and self.cut_after_events is not None:
            raise fail("cut_after_events", "cannot be combined with http_status")
        if self.http_status is not None and (
            isinstance(self.http_status, bool)
            or not isinstance(self.http_status, int)
            or not 400 <= self.http_status <= 599
        ):
            raise fail("http_status", f"want an int in 400..599, got {self.http_status!r}")
        if self.cut_after_events is not None:
            _count(self.cut_after_events, "cut_after_events")
        if self.delay_s is not None and (
            isinstance(self.delay_s, bool)
            or not isinstance(self.delay_s, int | float)
            or not math.isfinite(self.delay_s)
            or self.delay_s < 0
        ):
            raise fail("delay_s", f"want a non-negative number of seconds, got {self.delay_s!r}")
        if self.times is not None and _count(self.times, "times") == 0:
            raise fail("times", "want at least 1 (omit it to fault every request)")

    def describe(self) -> str:
        """Compact label for the ledger, e.g. ``http_status=529`` or ``delay_s=0.5,cut_after_events=3``."""
        parts = [f"delay_s={self.delay_s}"] if self.delay_s is not None else []
        if self.http_status is not None:
            parts.append(f"http_status={self.http_status}")
        if self.cut_after_events is not None:
            parts.append(f"cut_after_events={self.cut_after_events}")
        return ",".join(parts)


def _freeze(value: object, key: str) -> Any:
    """Deep-freeze a JSON value (dict → MappingProxyType, list → tuple); reject non-JSON YAML types."""
    if isinstance(value, Mapping):
        out = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise fail(key, f"want string keys, got {k!r}")
            out[k] = _freeze(v, f"{key}.{k}")
        return MappingProxyType(out)
    if isinstance(value, list | tuple):
        return tuple(_freeze(v, f"{key}[{i}]") for i, v in enumerate(value))
    if value is None or isinstance(value, str | bool | int):
        return value
    if isinstance(value, float) and math.isfinite(value):
        return value
    # An unquoted `2024-01-01` loads as a date; JSON cannot carry it, so say so here, not on the wire.
    raise fail(key, f"want a JSON value, got {type(value).__name__} {value!r}")


def substitute_cwd(value: Any, cwd: str | None) -> Any:
    """Thaw a frozen tool input into plain JSON, replacing the exact token ``{cwd}`` in strings.

    With ``cwd`` unknown (the request named no working directory) the token is left as is.
    """
    if isinstance(value, Mapping):
        return {k: substitute_cwd(v, cwd) for k, v in value.items()}
    if isinstance(value, tuple | list):
        return [substitute_cwd(v, cwd) for v in value]
    if isinstance(value, str) and cwd is not None:
        return value.replace(CWD_TOKEN, cwd)
    return value


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One scripted ``tool_use`` block: tool name and (deep-frozen) input."""

    name: str
    input: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise fail("name", f"want a non-empty tool name, got {self.name!r}")
        if not isinstance(self.input, Mapping):
            raise fail("input", f"want a mapping, got {type(self.input).__name__}")
        object.__setattr__(self, "input", _freeze(self.input, "input"))


@dataclass(frozen=True, slots=True)
class Turn:
    """One assistant reply. Stop reason is derived: ``tool_use`` iff there are tool calls."""

    text: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage = Usage()
    fault: Fault | None = None

    def __post_init__(self) -> None:
        if self.text is not None and (not isinstance(self.text, str) or not self.text):
            raise fail("text", f"want a non-empty string, got {self.text!r}")
        if not isinstance(self.tool_calls, tuple) or not all(
            isinstance(c, ToolCall) for c in self.tool_calls
        ):
            raise fail("tool_calls", "want a tuple of ToolCall")

    @property
    def stop_reason(self) -> str:
        return "tool_use" if self.tool_calls else "end_turn"


@dataclass(frozen=True, slots=True)
class Session:
    """The turns of one Claude session; turn i answers the request holding i assistant messages.

    ``subagents[j]`` scripts the j-th subagent (Agent/Task tool) the session spawns, in the order
    their ``x-claude-code-agent-id`` headers are first seen (CLI 2.1.332 sends the parent's session
    id on subagent requests too, so only that header tells them apart). A subagent's own
    ``subagents`` must be empty: nested subagents share their top-level session's list.
    """

    turns: tuple[Turn, ...]
    subagents: tuple[Session, ...] = ()

    def __post_init__(self) -> None:
        if any(sub.subagents for sub in self.subagents):
            raise fail("subagents", "a subagent cannot script its own subagents; list them all here")


def _patterns(value: object, key: str) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    if isinstance(value, tuple | list) and value and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise fail(key, f"want a glob string or a non-empty list of glob strings, got {value!r}")


@dataclass(frozen=True, slots=True)
class Match:
    """Which cells an entry serves: fnmatch globs over task id and arm name (any glob may match)."""

    task: tuple[str, ...] = ("*",)
    arm: tuple[str, ...] = ("*",)

    def __post_init__(self) -> None:
        object.__setattr__(self, "task", _patterns(self.task, "task"))
        object.__setattr__(self, "arm", _patterns(self.arm, "arm"))

    def matches(self, *, task: str, arm: str) -> bool:
        # fnmatchcase: a task id's case is significant on every platform.
        return any(fnmatch.fnmatchcase(task, p) for p in self.task) and any(
            fnmatch.fnmatchcase(arm, p) for p in self.arm
        )

    def describe(self) -> str:
        def one(globs: tuple[str, ...]) -> str:
            return repr(globs[0]) if len(globs) == 1 else "[" + ", ".join(map(repr, globs)) + "]"

        return f"{{task: {one(self.task)}, arm: {one(self.arm)}}}"


@dataclass(frozen=True, slots=True)
class Cell:
    match: Match
    sessions: tuple[Session, ...]


def rename_skills(sessions: tuple[Session, ...], renames: Mapping[str, str]) -> tuple[Session, ...]:
    """The same sessions with every ``Skill`` call's ``skill`` renamed (e.g. plan -> plugin:ce-plan).

    Lets a comparator arm reuse an incumbent's scripted sessions (by YAML alias)
    while invoking its own skills: only the skill a session asks for differs.
    """

    def call(c: ToolCall) -> ToolCall:
        if c.name != "Skill" or c.input.get("skill") not in renames:
            return c
        return ToolCall(name=c.name, input={**c.input, "skill": renames[c.input["skill"]]})

    def session(s: Session) -> Session:
        turns = tuple(replace(t, tool_calls=tuple(call(c) for c in t.tool_calls)) for t in s.turns)
        return Session(turns=turns, subagents=tuple(session(sub) for sub in s.subagents))

    return tuple(session(s) for s in sessions)


MAX_USAGE_SCALE = 10.0  # a typo guard: no demo needs more than an order of magnitude


def scale_usage(sessions: tuple[Session, ...], factor: object) -> tuple[Session, ...]:
    """The same sessions with every declared token count × ``factor`` (rounded down; unknown stays unknown).

    Lets a candidate arm replay its incumbent's scripted sessions (by YAML alias) while declaring
    less (or more) usage: the CLI prices the declared usage, so its cost scales with it.
    """
    if (
        isinstance(factor, bool)
        or not isinstance(factor, int | float)
        or not math.isfinite(factor)
        or not 0 < factor <= MAX_USAGE_SCALE
    ):
        raise fail("scale_usage", f"want a number in (0, {MAX_USAGE_SCALE:g}], got {factor!r}")

    def usage(u: Usage) -> Usage:
        return Usage(**{k: None if v is None else int(v * factor) for k, v in u.to_json().items()})

    def session(s: Session) -> Session:
        turns = tuple(replace(t, usage=usage(t.usage)) for t in s.turns)
        return Session(turns=turns, subagents=tuple(session(sub) for sub in s.subagents))

    return tuple(session(s) for s in sessions)


@dataclass(frozen=True, slots=True)
class Script:
    """A whole script. ``source`` is the file it came from, for error messages and reports."""

    model: str
    cells: tuple[Cell, ...]
    source: str = "<memory>"
    schema_version: int = SCHEMA_VERSION

    def __post_init__(self) -> None:
        if self.schema_version != SCHEMA_VERSION:
            raise fail("schema_version", f"want {SCHEMA_VERSION}, got {self.schema_version!r}")
        if not isinstance(self.model, str) or not self.model:
            raise fail("model", f"want a non-empty model name, got {self.model!r}")

    def cell_for(self, *, task: str, arm: str) -> Cell | None:
        """The first entry whose match accepts (task, arm), or ``None`` when the cell is unscripted."""
        return next((c for c in self.cells if c.match.matches(task=task, arm=arm)), None)
