"""The scripted provider's script: one declarative model per part of the file, which is its schema.

Owns the meaning of the format shared with the demo-script authors (``schema_version: 1``):
which cell (task × arm, fnmatch globs, first match wins) gets which sessions, and per session the
ordered turns (text, tool calls, declared usage, fault). Each part is a frozen pydantic model
(``input_files.InputModel``: unknown keys refused, values taken as written) whose fields and
rules are the file's keys; the whole file is validated once (``_load.parse_script``), so the
server trusts a ``Script`` without re-checking it. Reading YAML and locating an error in the file
live in ``_load``; this module does no I/O. Adding a key is one field in its part.

Errors are ``ScriptError``, naming the file, the cell (index and match) and the key path, so a
message reads ``demo.yaml: cells[2] match={task: 'bug-*'}: sessions[0].turns[1].usage.input_tokens:
...``. Building a part in code (``Usage(input_tokens=-3)``) raises ``ScriptError`` too.
"""

from __future__ import annotations

import fnmatch
import math
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Annotated, Any

from pydantic import BeforeValidator, Field, ValidationError, model_validator

from workflow_bench.input_files import InputModel, problems
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


def _count(value: object) -> int:
    # bool is an int subclass; `true` as a token count is a typo, never a number.
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"want a non-negative int, got {value!r}")
    return value


def _optional_count(value: object) -> int | None:
    return None if value is None else _count(value)


Count = Annotated[int | None, BeforeValidator(_optional_count)]
# A YAML list arrives as a list: the tuple is built from it, each item validated as declared.
_FROM_LIST = Field(strict=False)


class Part(InputModel):
    """A part of a script: built in code, a bad value is a ``ScriptError`` naming its key."""

    def __init__(self, **data: Any) -> None:
        try:
            super().__init__(**data)
        except ValidationError as exc:
            key, message = problems(exc, type(self))[0]
            raise ScriptError(message, key="" if key == "(document)" else key) from None

    # Validating a document must not call this for every nested part (pydantic calls an overridden
    # ``__init__`` for nested models): that would turn the inner error into an unlocated one.
    __init__.__pydantic_base_init__ = True  # type: ignore[attr-defined]


class Usage(Part):
    """Token usage a turn declares. ``None`` means "declared unknown", never zero."""

    input_tokens: Count = None
    output_tokens: Count = None
    cache_creation_input_tokens: Count = None
    cache_read_input_tokens: Count = None

    def to_json(self) -> dict[str, int | None]:
        return {name: getattr(self, name) for name in USAGE_FIELDS}


def _status(value: object) -> int | None:
    if value is not None and (
        isinstance(value, bool) or not isinstance(value, int) or not 400 <= value <= 599
    ):
        raise ValueError(f"want an int in 400..599, got {value!r}")
    return value


def _seconds(value: object) -> float | None:
    if value is not None and (
        isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0
    ):
        raise ValueError(f"want a non-negative number of seconds, got {value!r}")
    return value


def _times(value: object) -> int | None:
    if value is None:
        return None
    if _count(value) == 0:
        raise ValueError("want at least 1 (omit it to fault every request)")
    return _count(value)


class Fault(Part):
    """A scripted failure for one turn.

    ``http_status`` answers with that status and an Anthropic error body; ``cut_after_events``
    sends that many SSE events and then resets the connection; ``delay_s`` sleeps before
    answering and may be combined with either; ``reset: true`` reads the request and drops the
    connection with a TCP reset, answering nothing (a provider-side transport fault: the relay
    retries it once, and nothing is logged as served). ``times`` bounds how many requests hitting the
    turn (per minted key) get the fault; ``None`` means every one, after which the turn is served
    normally.
    """

    http_status: Annotated[int | None, BeforeValidator(_status)] = None
    cut_after_events: Count = None
    delay_s: Annotated[float | int | None, BeforeValidator(_seconds)] = None
    times: Annotated[int | None, BeforeValidator(_times)] = None
    reset: bool = False

    @model_validator(mode="after")
    def _one_fault(self) -> Fault:
        if (
            self.http_status is None
            and self.cut_after_events is None
            and self.delay_s is None
            and not self.reset
        ):
            raise ValueError("want at least one of http_status, cut_after_events, delay_s, reset")
        if self.http_status is not None and self.cut_after_events is not None:
            raise ValueError("cut_after_events: cannot be combined with http_status")
        if self.reset and (self.http_status is not None or self.cut_after_events is not None):
            raise ValueError("reset: cannot be combined with http_status or cut_after_events")
        return self

    def describe(self) -> str:
        """Compact label for the ledger, e.g. ``http_status=529`` or ``delay_s=0.5,cut_after_events=3``."""
        parts = [f"delay_s={self.delay_s}"] if self.delay_s is not None else []
        if self.http_status is not None:
            parts.append(f"http_status={self.http_status}")
        if self.cut_after_events is not None:
            parts.append(f"cut_after_events={self.cut_after_events}")
        if self.reset:
            parts.append("reset")
        return ",".join(parts)


def _freeze(value: object, key: str = "") -> Any:
    """Deep-freeze a JSON value (dict → MappingProxyType, list → tuple); reject non-JSON YAML types."""
    if isinstance(value, Mapping):
        out = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise ValueError(f"{key or '(input)'}: want string keys, got {k!r}")
            out[k] = _freeze(v, f"{key}.{k}" if key else k)
        return MappingProxyType(out)
    if isinstance(value, list | tuple):
        return tuple(_freeze(v, f"{key}[{i}]") for i, v in enumerate(value))
    if value is None or isinstance(value, str | bool | int):
        return value
    if isinstance(value, float) and math.isfinite(value):
        return value
    # An unquoted `2024-01-01` loads as a date; JSON cannot carry it, so say so here, not on the wire.
    raise ValueError(f"{key}: want a JSON value, got {type(value).__name__} {value!r}")


def _tool_input(value: object) -> Mapping[str, Any]:
    if value is None:
        return MappingProxyType({})
    if not isinstance(value, Mapping):
        raise ValueError(f"want a mapping, got {type(value).__name__}")
    frozen: Mapping[str, Any] = _freeze(value)
    return frozen


def _tool_name(value: object) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError(f"want a non-empty tool name, got {value!r}")
    return value


class ToolCall(Part):
    """One scripted ``tool_use`` block: tool name and (deep-frozen) input."""

    name: Annotated[str, BeforeValidator(_tool_name)]
    input: Annotated[Any, BeforeValidator(_tool_input)] = Field(default_factory=lambda: MappingProxyType({}))


def _text(value: object) -> str | None:
    if value is not None and (not isinstance(value, str) or not value):
        raise ValueError(f"want a non-empty string, got {value!r}")
    return value


class Turn(Part):
    """One assistant reply. Stop reason is derived: ``tool_use`` iff there are tool calls."""

    text: Annotated[str | None, BeforeValidator(_text)] = None
    tool_calls: Annotated[tuple[ToolCall, ...], _FROM_LIST] = ()
    usage: Usage = Field(default_factory=Usage)
    fault: Fault | None = None

    @property
    def stop_reason(self) -> str:
        return "tool_use" if self.tool_calls else "end_turn"


class Subagent(Part):
    """The turns of one subagent a session spawns; it has no ``subagents`` of its own (nested
    subagents share their top-level session's list)."""

    turns: Annotated[tuple[Turn, ...], _FROM_LIST]


class Session(Subagent):
    """The turns of one Claude session; turn i answers the request holding i assistant messages.

    ``subagents[j]`` scripts the j-th subagent (Agent/Task tool) the session spawns, in the order
    their ``x-claude-code-agent-id`` headers are first seen (CLI 2.1.332 sends the parent's session
    id on subagent requests too, so only that header tells them apart).
    """

    subagents: Annotated[tuple[Subagent, ...], _FROM_LIST] = ()


def _patterns(value: object) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    if isinstance(value, tuple | list) and value and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise ValueError(f"want a glob string or a non-empty list of glob strings, got {value!r}")


Patterns = Annotated[tuple[str, ...], BeforeValidator(_patterns)]


class Match(Part):
    """Which cells an entry serves: fnmatch globs over task id and arm name (any glob may match)."""

    task: Patterns = ("*",)
    arm: Patterns = ("*",)

    def matches(self, *, task: str, arm: str) -> bool:
        # fnmatchcase: a task id's case is significant on every platform.
        return any(fnmatch.fnmatchcase(task, p) for p in self.task) and any(
            fnmatch.fnmatchcase(arm, p) for p in self.arm
        )

    def describe(self) -> str:
        def one(globs: tuple[str, ...]) -> str:
            return repr(globs[0]) if len(globs) == 1 else "[" + ", ".join(map(repr, globs)) + "]"

        return f"{{task: {one(self.task)}, arm: {one(self.arm)}}}"


MAX_USAGE_SCALE = 10.0  # a typo guard: no demo needs more than an order of magnitude


def _scale(value: object) -> float | int | None:
    if value is not None and (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or not 0 < value <= MAX_USAGE_SCALE
    ):
        raise ValueError(f"want a number in (0, {MAX_USAGE_SCALE:g}], got {value!r}")
    return value


def _renames(value: object) -> Mapping[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise ValueError("want a mapping of skill name to skill name")
    return value


class Cell(Part):
    """One entry: which cells it serves and their sessions, after its ``rename_skills`` and
    ``scale_usage`` (which let an arm replay another arm's sessions by YAML alias)."""

    match: Match = Field(default_factory=Match)
    sessions: Annotated[tuple[Session, ...], _FROM_LIST]
    rename_skills: Annotated[Mapping[str, str], BeforeValidator(_renames)] = Field(default_factory=dict)
    scale_usage: Annotated[float | int | None, BeforeValidator(_scale)] = None

    @model_validator(mode="after")
    def _apply(self) -> Cell:
        sessions = rename_skills(self.sessions, self.rename_skills) if self.rename_skills else self.sessions
        if self.scale_usage is not None:
            sessions = scale_usage(sessions, self.scale_usage)
        object.__setattr__(self, "sessions", sessions)  # the served sessions; frozen from here on
        return self


def rename_skills(sessions: tuple[Session, ...], renames: Mapping[str, str]) -> tuple[Session, ...]:
    """The same sessions with every ``Skill`` call's ``skill`` renamed (e.g. plan -> plugin:ce-plan).

    Lets a comparator arm reuse an incumbent's scripted sessions (by YAML alias)
    while invoking its own skills: only the skill a session asks for differs.
    """

    def call(c: ToolCall) -> ToolCall:
        if c.name != "Skill" or c.input.get("skill") not in renames:
            return c
        return ToolCall(name=c.name, input={**c.input, "skill": renames[c.input["skill"]]})

    return tuple(
        _each_turn(s, lambda t: t.model_copy(update={"tool_calls": tuple(call(c) for c in t.tool_calls)}))
        for s in sessions
    )


def scale_usage(sessions: tuple[Session, ...], factor: float) -> tuple[Session, ...]:
    """The same sessions with every declared token count × ``factor`` (rounded down; unknown stays unknown).

    Lets a candidate arm replay its incumbent's scripted sessions (by YAML alias) while declaring
    less (or more) usage: the CLI prices the declared usage, so its cost scales with it.
    """

    def usage(u: Usage) -> Usage:
        return Usage(**{k: None if v is None else int(v * factor) for k, v in u.to_json().items()})

    return tuple(_each_turn(s, lambda t: t.model_copy(update={"usage": usage(t.usage)})) for s in sessions)


def _each_turn(session: Session, change: Callable[[Turn], Turn]) -> Session:
    """The session with ``change`` applied to every turn, its subagents' turns included."""
    subagents = tuple(
        sub.model_copy(update={"turns": tuple(map(change, sub.turns))}) for sub in session.subagents
    )
    return session.model_copy(update={"turns": tuple(map(change, session.turns)), "subagents": subagents})


def _version(value: object) -> int:
    if value != SCHEMA_VERSION or isinstance(value, bool):
        raise ValueError(f"want {SCHEMA_VERSION}, got {value!r}")
    return SCHEMA_VERSION


def _model_name(value: object) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError(f"want a non-empty model name, got {value!r}")
    return value


class Script(Part):
    """A whole script. ``source`` is the file it came from, for error messages and reports."""

    model: Annotated[str, BeforeValidator(_model_name)]
    cells: Annotated[tuple[Cell, ...], _FROM_LIST]
    source: str = "<memory>"
    schema_version: Annotated[int, BeforeValidator(_version)] = SCHEMA_VERSION

    def cell_for(self, *, task: str, arm: str) -> Cell | None:
        """The first entry whose match accepts (task, arm), or ``None`` when the cell is unscripted."""
        return next((c for c in self.cells if c.match.matches(task=task, arm=arm)), None)


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
