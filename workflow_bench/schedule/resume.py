"""Resume an interrupted sweep in place: the configuration lock and the rows worth keeping.

``sweep.lock.json`` is written when a sweep starts and pins everything that
makes its rows comparable (model, effort, provider and script, arms, runs,
task binding and oracle digests, skill/overlay/comparator digests, CLI and
harness versions, sandbox backend, scheduler). ``--resume DIR`` recomputes the
lock from the new invocation and refuses (exit 2) any difference, naming the
fields, before a cell runs.

Which rows are kept: every complete line of ``results.jsonl`` whose cell is in
the plan and whose transcripts still match their recorded size and sha256. A
torn last line (the runner was killed mid-write; rows are single fsynced
appends, so only the last line can be torn) is dropped. A complete line that
does not parse is corruption, not a crash, and is refused. Rows that fail the
check, duplicates of a kept cell, and artifacts of cells that have no kept
row (written just before a kill) are moved to ``superseded/<stamp>/`` rather
than deleted, and ``results.jsonl`` is rewritten atomically with the kept
rows, so the resumed sweep appends exactly one row per missing cell.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

from workflow_bench.output.directory import RESULTS_FILE, atomic_write_text
from workflow_bench.providers.access import CellKey
from workflow_bench.rows.migrate import RowReadError, row_from_line, stored_line
from workflow_bench.rows.model import Row

LOCK_FILE = "sweep.lock.json"
SUPERSEDED_DIR = "superseded"
_PACKAGE_ROOT = Path(__file__).resolve().parents[1]
# The judge kit runs inside the sandbox and holds JavaScript reporters too: every file counts.
_KIT_ROOT = _PACKAGE_ROOT / "judging" / "kit"


class ResumeError(ValueError):
    """The directory cannot be resumed by this invocation (exit 2, nothing run)."""


def tree_digest(root: Path, *, pattern: str = "*") -> str | None:
    """sha256 over (relative path, content sha256) of every file under ``root``; None if absent."""
    if not root.is_dir():
        return None
    digest = hashlib.sha256()
    for path in sorted(p for p in root.rglob(pattern) if p.is_file() and "__pycache__" not in p.parts):
        digest.update(
            f"{path.relative_to(root).as_posix()}\0{hashlib.sha256(path.read_bytes()).hexdigest()}\n".encode()
        )
    return digest.hexdigest()


def harness_version() -> str:
    """Package version plus a digest of its Python sources and the judge kit: a code change between
    runs is a change."""
    try:
        version = metadata.version("workflow-bench")
    except metadata.PackageNotFoundError:
        version = "unknown"
    sources = f"{tree_digest(_PACKAGE_ROOT, pattern='*.py')}:{tree_digest(_KIT_ROOT)}"
    return f"{version}+{hashlib.sha256(sources.encode()).hexdigest()[:16]}"


def write_lock(out_dir: Path, lock: Mapping[str, Any]) -> None:
    atomic_write_text(out_dir / LOCK_FILE, json.dumps(dict(lock), indent=2, sort_keys=True) + "\n")


def check_lock(out_dir: Path, lock: Mapping[str, Any]) -> None:
    """Refuse to resume unless ``out_dir`` holds a lock equal to ``lock``, naming what differs."""
    path = out_dir / LOCK_FILE
    if not out_dir.is_dir():
        raise ResumeError(f"--resume {out_dir}: no such directory")
    if not path.is_file():
        raise ResumeError(f"--resume {out_dir}: no {LOCK_FILE}; not a sweep directory this version wrote")
    try:
        recorded = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ResumeError(f"--resume {out_dir}: unreadable {LOCK_FILE}: {exc}") from exc
    if not isinstance(recorded, dict):
        raise ResumeError(f"--resume {out_dir}: {LOCK_FILE} is not a JSON object")
    current = json.loads(json.dumps(dict(lock)))  # tuples → lists, as recorded
    differing = sorted(k for k in set(recorded) | set(current) if recorded.get(k) != current.get(k))
    if differing:
        detail = "; ".join(f"{k}: recorded {recorded.get(k)!r}, now {current.get(k)!r}" for k in differing)
        raise ResumeError(f"--resume {out_dir}: configuration differs in {', '.join(differing)} ({detail})")


def _transcripts_intact(out_dir: Path, row: Row) -> str | None:
    """None when every recorded transcript exists with its size and sha256; else why not."""
    if row.transcript_artifacts is None:
        return "no transcript_artifacts list"
    for entry in row.transcript_artifacts:
        path = out_dir / entry.path
        if not path.resolve().is_relative_to(out_dir.resolve()) or path.is_symlink() or not path.is_file():
            return f"transcript {entry.path} missing"
        data = path.read_bytes()
        if len(data) != entry.bytes or hashlib.sha256(data).hexdigest() != entry.sha256:
            return f"transcript {entry.path} does not match its recorded sha256"
    return None


def kept_rows(
    out_dir: Path, planned: Sequence[CellKey], *, log=print, dry_run: bool = False
) -> tuple[Row, ...]:
    """The rows a resumed sweep keeps; everything else is moved aside (see the module docstring).

    ``dry_run`` (``runner --dry-run``) decides the same rows and moves and rewrites nothing.
    """
    results = out_dir / RESULTS_FILE
    data = results.read_bytes() if results.is_file() else b""
    complete, _, torn = data.rpartition(b"\n")
    lines = complete.split(b"\n") if complete else []
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
    aside = out_dir / SUPERSEDED_DIR / stamp
    superseded: list[str] = []
    if torn.strip():
        log(f"[resume] dropping a torn last line of {RESULTS_FILE} ({len(torn)} bytes)")
        superseded.append(torn.decode("utf-8", errors="replace"))
    plan = set(planned)
    kept: dict[CellKey, Row] = {}
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = row_from_line(line, where=f"{results}: line {number}")
        except RowReadError as exc:
            raise ResumeError(f"{exc}; refusing to guess") from exc
        key = row.key
        if key not in plan:
            raise ResumeError(f"{results}: line {number} is not a cell of this sweep's plan")
        why = "a row for this cell is already kept" if key in kept else _transcripts_intact(out_dir, row)
        if why is None:
            kept[key] = row
        else:
            log(f"[resume] {key.label} runs again: {why}")
            superseded.append(line.decode())
    ordered = [kept[k] for k in planned if k in kept]
    if dry_run:
        return tuple(ordered)
    for key in plan - set(kept):
        _move_artifacts(out_dir, key, aside)
    if superseded:
        aside.mkdir(parents=True, exist_ok=True)
        atomic_write_text(aside / RESULTS_FILE, "".join(s + "\n" for s in superseded))
    atomic_write_text(results, "".join(stored_line(row) for row in ordered))
    return tuple(ordered)


def _move_artifacts(out_dir: Path, key: CellKey, aside: Path) -> None:
    """Move a cell's leftover artifacts (no kept row points at them) out of the way of its rerun."""
    names = [f"{key.slug}.patch", f"{key.slug}.review.json"]
    for folder in ("transcripts", "wire"):  # wire/: the relay's record of each session
        if (out_dir / folder).is_dir():
            found = (out_dir / folder).iterdir()
            names += [f"{folder}/{p.name}" for p in found if p.name.startswith(f"{key.slug}-s")]
    for name in _existing(out_dir, names):
        target = aside / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(out_dir / name, target)


def _existing(out_dir: Path, names: Iterable[str]) -> list[str]:
    return [n for n in names if (out_dir / n).exists() or (out_dir / n).is_symlink()]
