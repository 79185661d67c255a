"""The learning queue: one-line JSON notes skill runs leave for the proposer, never for the skill.

A line is ``{"skill", "date", "task", "friction", "suggestion"}`` (strings; ``date`` an ISO
date). Live skill runs never edit a skill: they (or the operator, after reading a transcript)
append a note with ``python -m workflow_bench.evolve.learnings --skill plan --task T --friction
"..." --suggestion "..."`` (or ``append_learning``), to ``workflow_bench/learnings.jsonl`` by
default (machine-local, git-ignored). The proposer sees the last ``MAX_LEARNINGS`` notes for the
skills it may change, as hints in its evidence bundle; a learning reaches a shipped skill only
by winning the promotion gate like any other change.

A malformed queue is bad input (exit 2 naming the file and line), never silently skipped.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from workflow_bench.input_files import InputFileError, read_bounded


class LearningNote(BaseModel):
    """One note of the queue, checked (``check_note``); written back as the same five keys."""

    model_config = ConfigDict(frozen=True, strict=True, extra="forbid")

    skill: str = Field(description="the skill the note is about (plan, work, review, ...)")
    date: str = Field(description="when the friction was seen (an ISO date, a time may follow)")
    task: str = Field(description="the task the skill ran on")
    friction: str = Field(description="what went wrong or took too long")
    suggestion: str = Field(description="what the skill could do instead")


FIELDS = tuple(LearningNote.model_fields)
MAX_LEARNINGS = 40  # reference: the proposer sees the last 40 notes for its skills
MAX_FILE_BYTES = 4 * 1024 * 1024
MAX_FIELD_CHARS = 2000  # a note is a hint, not a transcript


class LearningsError(ValueError):
    """A malformed learning queue or note (file and line named)."""


def check_note(note: Any, *, where: str) -> LearningNote:
    if not isinstance(note, Mapping) or set(note) != set(FIELDS):
        raise LearningsError(f"{where}: want an object with exactly the keys {', '.join(FIELDS)}")
    for key, value in note.items():
        if not isinstance(value, str) or not value.strip() or len(value) > MAX_FIELD_CHARS:
            raise LearningsError(
                f"{where}: {key}: want a non-empty string of at most {MAX_FIELD_CHARS} chars"
            )
    checked = LearningNote.model_validate(note)
    try:
        dt.date.fromisoformat(checked.date[:10])
    except ValueError:
        raise LearningsError(f"{where}: date: want an ISO date, got {checked.date!r}") from None
    return checked


def read_learnings(path: Path) -> tuple[LearningNote, ...]:
    """Every note in ``path`` (an absent file is an empty queue); raises LearningsError."""
    if not path.exists():
        return ()
    try:
        text = read_bounded(path, max_bytes=MAX_FILE_BYTES).decode("utf-8")
    except (InputFileError, OSError, UnicodeDecodeError) as exc:
        raise LearningsError(f"{path}: {exc}") from None
    notes = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            note = json.loads(line)
        except ValueError as exc:
            raise LearningsError(f"{path}: line {number}: not JSON: {exc}") from None
        notes.append(check_note(note, where=f"{path}: line {number}"))
    return tuple(notes)


def notes_for(notes: Sequence[LearningNote], skills: Collection[str]) -> list[LearningNote]:
    """The last ``MAX_LEARNINGS`` notes about ``skills``, oldest first."""
    return [n for n in notes if n.skill in skills][-MAX_LEARNINGS:]


def append_learning(path: Path, note: Mapping[str, str]) -> None:
    """Append one checked note as one line, fsynced (O_APPEND: concurrent writers never interleave)."""
    checked = check_note(note, where="note")
    line = json.dumps(checked.model_dump(), ensure_ascii=False, sort_keys=True) + "\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, line.encode())
        os.fsync(fd)
    finally:
        os.close(fd)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m workflow_bench.evolve.learnings", description="Append one note to the learning queue."
    )
    parser.add_argument("--file", type=Path, default=Path("workflow_bench") / "learnings.jsonl")
    for key in ("skill", "task", "friction", "suggestion"):
        parser.add_argument(f"--{key}", required=True)
    parser.add_argument("--date", default=dt.datetime.now(dt.UTC).date().isoformat())
    args = parser.parse_args(argv)
    try:
        append_learning(args.file, {key: getattr(args, key) for key in FIELDS})
    except (LearningsError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"appended a {args.skill} note to {args.file}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
