"""Skill evidence from a session's stream: was the expected skill requested and did it succeed.

Owns ``skill_evidence`` (a Skill tool_use for the expected skill followed by a successful
tool_result, with every malformation making the evidence unverifiable rather than negative),
``normalize_skill_name`` and ``tool_use_counts``: pure functions over parsed stream events; and
``forked_skills``, the skills of a session that run as a forked subagent (read from their
``SKILL.md`` front matter, for the wire's subagent rule in ``evidence``).
Callers: ``sessions.parse_session``, ``run``, tests.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from workflow_bench.redaction import printable

# Tool names come from the model: bounded and escaped wherever they are stored or printed.
TOOL_NAME_CHARS = 128
_TOOL_USE_ID = re.compile(r"[A-Za-z0-9_-]{1,256}")
# A skill directory's SKILL.md: only its front matter is read, and at most this much of it.
_FRONT_MATTER_BYTES = 16 * 1024
_MAX_SKILL_DIRS = 1000  # per root; a toolkit has a handful
_FORK = re.compile(r"^context:\s*['\"]?fork['\"]?\s*$", re.MULTILINE)
_NAME = re.compile(r"^name:\s*['\"]?([^'\"\n]+?)['\"]?\s*$", re.MULTILINE)


def forked_skills(*roots: Path) -> frozenset[str]:
    """Lower-case names (directory and ``name:``) of the skills under ``roots`` declaring ``context: fork``.

    Each root holds ``<skill>/SKILL.md`` (the clone's ``.claude/skills``, a plugin's ``skills``);
    a missing root, an unreadable file or a symlink counts as no skill. Bounded: 16 KiB per file,
    1,000 directories per root.
    """
    found: set[str] = set()
    for root in roots:
        try:
            entries = sorted(os.scandir(root), key=lambda e: e.name)[:_MAX_SKILL_DIRS]
        except OSError:
            continue
        for entry in entries:
            try:
                if not entry.is_dir(follow_symlinks=False):
                    continue
                fd = os.open(os.path.join(entry.path, "SKILL.md"), os.O_RDONLY | os.O_NOFOLLOW)
                with os.fdopen(fd, "rb") as handle:
                    head = handle.read(_FRONT_MATTER_BYTES).decode("utf-8", "replace")
            except OSError:
                continue
            if not head.startswith("---"):
                continue
            front = head[3:].split("\n---", 1)[0]
            if _FORK.search(front):
                found.add(entry.name.lower())
                if named := _NAME.search(front):
                    found.add(named.group(1).strip().lower())
    return frozenset(found)


def _content_blocks(events: Sequence[Mapping[str, Any]], event_type: str):
    for event in events:
        if event.get("type") != event_type:
            continue
        message = event.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, list):
            for block in content:
                if isinstance(block, dict):
                    yield block


def tool_use_counts(events: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    """Tool calls per tool name; names are model output, so each is stored as ``printable`` (bounded)."""
    counts: dict[str, int] = {}
    for block in _content_blocks(events, "assistant"):
        if block.get("type") == "tool_use" and isinstance(block.get("name"), str):
            name = printable(block["name"], TOOL_NAME_CHARS)
            counts[name] = counts.get(name, 0) + 1
    return dict(sorted(counts.items()))


def normalize_skill_name(raw: Any) -> str | None:
    """``/plan args`` → ``plan``; ``plugin:plan`` → ``plan``."""
    if not isinstance(raw, str) or not raw.strip():
        return None
    token = raw.strip().split()[0].lstrip("/")
    return token.rsplit(":", 1)[-1].lower() or None


def skill_evidence(events: Sequence[Mapping[str, Any]], expected: str) -> tuple[bool | None, list[str]]:
    """Was ``expected`` invoked: a Skill tool_use followed by a successful tool_result?

    Returns (True, []) on proof, (False, []) when no request for the skill
    exists, and (None, reasons) when the stream is too malformed to tell —
    duplicate ids, a malformed ``is_error``, or a result that does not follow
    its request make the evidence unverifiable, not negative.
    """
    diagnostics: list[str] = []
    requests: dict[str, int] = {}
    seen_ids: set[str] = set()
    position = 0
    ordered: list[tuple[int, str, Mapping[str, Any]]] = []
    for event in events:
        position += 1
        kind = event.get("type")
        if kind not in ("assistant", "user"):
            continue
        message = event.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        if not isinstance(content, list):
            continue
        for block in content:
            if isinstance(block, dict):
                ordered.append((position, kind, block))
    for pos, kind, block in ordered:
        if kind != "assistant" or block.get("type") != "tool_use":
            continue
        tool_id = block.get("id")
        if not isinstance(tool_id, str) or not _TOOL_USE_ID.fullmatch(tool_id):
            diagnostics.append("tool_use with a malformed id")
            continue
        if tool_id in seen_ids:
            diagnostics.append(f"duplicate tool_use id {tool_id}")
            continue
        seen_ids.add(tool_id)
        name = block.get("name")
        inputs = block["input"] if isinstance(block.get("input"), dict) else {}
        if isinstance(name, str) and name.lower() == "skill":
            requested = next(
                (normalize_skill_name(inputs.get(k)) for k in ("skill", "command", "name") if inputs.get(k)),
                None,
            )
            if requested == expected.lower():
                requests[tool_id] = pos
    if not requests:
        return (None, diagnostics) if diagnostics else (False, [])
    results_seen: set[str] = set()
    succeeded = False
    for pos, kind, block in ordered:
        if kind != "user" or block.get("type") != "tool_result":
            continue
        tool_id = block.get("tool_use_id")
        if tool_id not in requests:
            continue
        if tool_id in results_seen:
            diagnostics.append(f"duplicate tool_result for {tool_id}")
            return None, diagnostics
        results_seen.add(tool_id)
        is_error = block.get("is_error")
        if is_error is not None and not isinstance(is_error, bool):
            diagnostics.append(f"malformed is_error on {tool_id}")
            return None, diagnostics
        if pos <= requests[tool_id]:
            diagnostics.append(f"tool_result for {tool_id} precedes its request")
            return None, diagnostics
        succeeded = succeeded or is_error is not True
    # Decided only after every result was seen: a later duplicate must still
    # make the evidence unverifiable rather than be ignored behind a success.
    return succeeded, diagnostics
