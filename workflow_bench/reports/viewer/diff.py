"""A cell's patch as files, hunks and lines for the page to render as a diff.

The patch is the harness's own ``git diff --binary`` of the cell (``workspace.patch``), but its
paths and lines are the agent's, so each line is made ``visible`` and bounded, and the whole
rendering is cut at the cell's patch budget (``omitted_lines`` counts what was left out; the
raw ``.patch`` file is linked beside it). A path is taken from the ``diff --git`` header (git's
C-quoting undone), then from ``+++``/``---`` when those name it. Pure.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from .text import Budget, visible

_HEADER = re.compile(r'^diff --git (?P<a>"(?:[^"\\]|\\.)*"|\S+) (?P<b>"(?:[^"\\]|\\.)*"|\S+)$')
_ESCAPES = {"a": "\a", "b": "\b", "t": "\t", "n": "\n", "v": "\v", "f": "\f", "r": "\r", '"': '"', "\\": "\\"}
MAX_LINE_CHARS = 1000  # a minified line is still one line; its head is enough to recognise it


def unquote(path: str) -> str:
    """A path as git prints it (C-quoted when it holds special bytes) as text."""
    if not (len(path) >= 2 and path[0] == path[-1] == '"'):
        return path
    body, out, i = path[1:-1], bytearray(), 0
    while i < len(body):
        char = body[i]
        if char == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            if nxt in "01234567" and re.fullmatch(r"[0-7]{3}", body[i + 1 : i + 4]):
                out.append(int(body[i + 1 : i + 4], 8))
                i += 4
                continue
            out += _ESCAPES.get(nxt, nxt).encode()
            i += 2
            continue
        out += char.encode()
        i += 1
    return out.decode("utf-8", errors="replace")


def _strip_prefix(path: str) -> str:
    return path[2:] if path[:2] in ("a/", "b/") else path


def header_paths(line: str) -> tuple[str, str] | None:
    """(old, new) of a ``diff --git`` line; an unquoted path may hold spaces (``a/x y b/x y``)."""
    if not line.startswith("diff --git "):
        return None
    quoted = _HEADER.match(line)
    if quoted:
        return _strip_prefix(unquote(quoted["a"])), _strip_prefix(unquote(quoted["b"]))
    rest = line[len("diff --git ") :]
    half = (len(rest) - 1) // 2
    if len(rest) % 2 == 1 and rest[half] == " " and rest[2:half] == rest[half + 3 :]:
        return _strip_prefix(rest[:half]), _strip_prefix(rest[half + 1 :])
    return rest, rest  # unusual; ``+++`` names the file when there is one


@dataclass(slots=True)
class _File:
    path: str
    old_path: str
    status: str = "modified"
    added: int = 0
    removed: int = 0
    lines: list[list[str]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "old_path": self.old_path,
            "status": self.status,
            "added": self.added,
            "removed": self.removed,
            "lines": self.lines,
        }


def _kind(line: str, in_hunk: bool) -> str:
    if line.startswith("@@"):
        return "hunk"
    if in_hunk and line[:1] == "+":
        return "add"
    if in_hunk and line[:1] == "-":
        return "del"
    if in_hunk and line[:1] in (" ", ""):
        return "ctx"
    return "meta"


def parse_patch(text: str, budget: Budget) -> dict[str, Any]:
    """``{files: [{path, old_path, status, added, removed, lines: [[kind, text]]}], omitted_lines}``.

    ``kind`` is one of hunk, add, del, ctx, meta. Counts cover every line, shown or not.
    """
    files: list[_File] = []
    current: _File | None = None
    in_hunk = False
    omitted = 0
    preamble: list[list[str]] = []
    for line in text.split("\n"):
        header = header_paths(line)
        if header:
            old, new = header
            current = _File(path=visible(new), old_path=visible(old))
            files.append(current)
            in_hunk = False
        elif current is not None and not in_hunk:
            if line.startswith("new file mode"):
                current.status = "added"
            elif line.startswith("deleted file mode"):
                current.status = "deleted"
            elif line.startswith("rename from") or line.startswith("similarity index"):
                current.status = "renamed"
            elif line.startswith("+++ ") and line[4:] != "/dev/null":
                current.path = visible(_strip_prefix(unquote(line[4:].rstrip("\t"))))
            elif line.startswith("Binary files"):
                current.status = "binary" if current.status == "modified" else current.status
        if line.startswith("@@") and current is not None:
            in_hunk = True
        kind = _kind(line, in_hunk) if not header else "meta"
        if current is not None and in_hunk:
            current.added += kind == "add"
            current.removed += kind == "del"
        target = current.lines if current is not None else preamble
        if not line and current is None:
            continue
        if budget.left <= 0:
            omitted += 1
            continue
        piece = budget.take(line, MAX_LINE_CHARS)
        budget.charge(12)  # the [kind, text] frame
        target.append([kind, piece.text])
    result = [f.to_json() for f in files]
    if preamble:
        result.insert(
            0, {"path": "", "old_path": "", "status": "text", "added": 0, "removed": 0, "lines": preamble}
        )
    return {"files": result, "omitted_lines": omitted}
