"""Reading a scripted-provider script: YAML → ``Script``, with errors that say where.

Owns the *shape* checks (is it a mapping? a list? only known keys?) and the error location:
the file, the cell (``cells[i] match={...}``) and the dotted key path. Value checks (counts,
statuses, globs) belong to the dataclasses in ``_script``, which this module only assembles.
Pure apart from reading the one file it is given, through the bounded loader of
``input_files`` (size cap, no FIFOs or devices, duplicate keys and alias bombs refused).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from workflow_bench.input_files import InputFileError, load_yaml, read_bounded
from workflow_bench.providers.scripted._script import (
    Cell,
    Fault,
    Match,
    Script,
    ScriptError,
    Session,
    ToolCall,
    Turn,
    Usage,
    fail,
    rename_skills,
    scale_usage,
)
from workflow_bench.usage import USAGE_FIELDS

_T = TypeVar("_T")
# Scripts carry whole file contents for the scripted tool calls; the demo script is 74 KB.
MAX_SCRIPT_BYTES = 8 * 1024 * 1024


def _mapping(raw: object, key: str, allowed: tuple[str, ...]) -> Mapping[str, Any]:
    if not isinstance(raw, Mapping):
        raise fail(key, f"want a mapping, got {type(raw).__name__}")
    unknown = sorted(str(k) for k in raw if k not in allowed)
    if unknown:
        name = ".".join(p for p in (key, unknown[0]) if p)
        raise fail(name, f"unknown key; known keys: {', '.join(allowed)}")
    return raw


def _list(raw: object, key: str) -> list[Any]:
    if not isinstance(raw, list):
        raise fail(key, f"want a list, got {type(raw).__name__}")
    return raw


def _build(prefix: str, make: Callable[[], _T]) -> _T:
    try:
        return make()
    except ScriptError as err:
        raise ScriptError(err.message, key=".".join(p for p in (prefix, err.key) if p)) from None


def _parse_call(raw: object, key: str) -> ToolCall:
    call = _mapping(raw, key, ("name", "input"))
    raw_input = call.get("input")
    name = call.get("name")  # ToolCall refuses a missing or non-string name, naming the key
    return _build(key, lambda: ToolCall(name=name, input={} if raw_input is None else raw_input))  # type: ignore[arg-type]


def _parse_turn(raw: object, key: str) -> Turn:
    turn = _mapping(raw, key, ("text", "tool_calls", "usage", "fault"))
    raw_calls = _list([] if turn.get("tool_calls") is None else turn["tool_calls"], f"{key}.tool_calls")
    calls = [_parse_call(rc, f"{key}.tool_calls[{i}]") for i, rc in enumerate(raw_calls)]
    usage_raw = _mapping({} if turn.get("usage") is None else turn["usage"], f"{key}.usage", USAGE_FIELDS)
    usage = _build(f"{key}.usage", lambda: Usage(**usage_raw))
    fault = None
    if turn.get("fault") is not None:
        fault_raw = _mapping(
            turn["fault"], f"{key}.fault", ("http_status", "cut_after_events", "delay_s", "times")
        )
        fault = _build(f"{key}.fault", lambda: Fault(**fault_raw))
    return _build(key, lambda: Turn(text=turn.get("text"), tool_calls=tuple(calls), usage=usage, fault=fault))


def _parse_cell(raw: object) -> Cell:
    cell = _mapping(raw, "", ("match", "sessions", "rename_skills", "scale_usage"))
    match_raw = _mapping({} if cell.get("match") is None else cell["match"], "match", ("task", "arm"))
    match = _build("match", lambda: Match(**match_raw))
    sessions = [
        _parse_session(raw, f"sessions[{s}]", nested=True)
        for s, raw in enumerate(_list(cell.get("sessions"), "sessions"))
    ]
    renames = cell.get("rename_skills") or {}
    if not isinstance(renames, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in renames.items()
    ):
        raise ScriptError("want a mapping of skill name to skill name", key="rename_skills")
    renamed = rename_skills(tuple(sessions), renames)
    if "scale_usage" in cell:
        renamed = scale_usage(renamed, cell["scale_usage"])
    return Cell(match=match, sessions=renamed)


def _parse_session(raw: object, key: str, *, nested: bool) -> Session:
    session = _mapping(raw, key, ("turns", "subagents") if nested else ("turns",))
    turns = _list(session.get("turns"), f"{key}.turns")
    raw_subagents = _list(session.get("subagents") or [], f"{key}.subagents")
    subagents = tuple(
        _parse_session(sub, f"{key}.subagents[{j}]", nested=False) for j, sub in enumerate(raw_subagents)
    )
    parsed = tuple(_parse_turn(t, f"{key}.turns[{i}]") for i, t in enumerate(turns))
    return _build(key, lambda: Session(turns=parsed, subagents=subagents))


def parse_script(data: object, *, source: str) -> Script:
    """Build a ``Script`` from already-parsed YAML; ``source`` names it in errors."""
    try:
        top = _mapping(data, "", ("schema_version", "model", "cells"))
        for required in ("schema_version", "model", "cells"):
            if required not in top:
                raise fail(required, "missing required key")
        raw_cells = _list(top["cells"], "cells")
    except ScriptError as err:
        raise err.located(source=source, where="top level") from None
    cells = []
    for i, raw_cell in enumerate(raw_cells):
        where = f"cells[{i}]"
        if isinstance(raw_cell, Mapping) and isinstance(raw_cell.get("match"), Mapping):
            pairs = ", ".join(f"{k}: {v!r}" for k, v in raw_cell["match"].items())
            where += f" match={{{pairs}}}"
        try:
            cells.append(_parse_cell(raw_cell))
        except ScriptError as err:
            raise err.located(source=source, where=where) from None
    try:
        return Script(
            model=top["model"], cells=tuple(cells), source=source, schema_version=top["schema_version"]
        )
    except ScriptError as err:
        raise err.located(source=source, where="top level") from None


def load_script(path: str | Path) -> Script:
    """Read and validate a script file. Raises ``ScriptError`` (also for unreadable or non-YAML files)."""
    source = str(path)
    try:
        text = read_bounded(path, max_bytes=MAX_SCRIPT_BYTES).decode("utf-8")
        data = load_yaml(text)
    except (OSError, UnicodeDecodeError, InputFileError) as err:
        raise ScriptError(f"cannot load: {err}", source=source) from None
    return parse_script(data, source=source)
