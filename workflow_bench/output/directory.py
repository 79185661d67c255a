"""The output directory: the only writer of results.jsonl, artifacts and reports.

Durability contract: a cell's artifacts (patch, transcripts, its lines of the sweep-level record
files) are written first, then its row is appended to ``results.jsonl`` and
fsynced before ``persist`` returns — so a
row on disk always points at artifacts that exist, and a crash right after
loses nothing that was paid for. Transcripts are owner-only (dir 0700,
files 0600, created exclusively, never through a symlink).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from workflow_bench.rows.migrate import stored_line
from workflow_bench.rows.model import Row

RESULTS_FILE = "results.jsonl"
# Sweep-level JSON-lines files a cell may add to through ``records/<name>`` artifacts: what the
# model side observed per request (the scripted provider's ledger, the gateway's usage log).
RECORD_FILES = frozenset({"provider-ledger.jsonl", "gateway-usage.jsonl"})
TRANSCRIPT_SOURCE = "parent-captured-stream-json"


class OutputDirError(ValueError):
    """``--out`` cannot be used (before the sweep): exit 2, nothing written."""


class OutputWriteError(OSError):
    """Writing into ``--out`` failed mid-sweep (disk full, quota, read-only, permissions).

    Whatever was being written is rolled back (a partial artifact removed, ``results.jsonl``
    truncated back to its last complete row), so every row already on disk stays whole.
    """


def jsonl_text(records) -> str:
    """One sorted-key JSON line per record: the one spelling of every JSON-lines file we write."""
    return "".join(json.dumps(r, sort_keys=True, ensure_ascii=False) + "\n" for r in records)


def atomic_write_text(path: Path, text: str) -> None:
    """Replace ``path`` with ``text``: a fsynced temporary file renamed over it, directory fsynced."""
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "w", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def _write_all(fd: int, data: bytes) -> None:
    """Unbuffered write of every byte, then fsync (no buffer left to flush half-way on close)."""
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]
    os.fsync(fd)


def _owner_only(path: str, flags: int) -> int:
    return os.open(path, flags | os.O_NOFOLLOW, 0o600)


class OutputDir:
    def __init__(self, root: Path) -> None:
        self.root = root
        self._lock = threading.Lock()

    def _write_exclusive(self, relative: str, data: bytes, *, mode: int) -> Path:
        path = self.root / relative
        if path.parent != self.root:
            path.parent.mkdir(mode=0o700, exist_ok=True)
            if path.parent.is_symlink() or not path.parent.is_dir():
                raise OutputDirError(f"{path.parent} is not a real directory")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
        try:
            _write_all(fd, data)
        except OSError:
            path.unlink(missing_ok=True)  # never leave a truncated artifact behind
            raise
        finally:
            os.close(fd)
        return path

    def persist(self, slug: str, row: Row, artifacts: Mapping[str, bytes]) -> Row:
        """Write the cell's artifacts, then append its row (fsynced). Returns the row as stored."""
        try:
            with self._lock:
                return self._persist(slug, row, artifacts)
        except OSError as err:
            raise OutputWriteError(
                err.errno, f"cannot write cell {slug} into {self.root}: {err.strerror or err}"
            ) from err

    def _persist(self, slug: str, row: Row, artifacts: Mapping[str, bytes]) -> Row:
        named: dict[str, str] = {}
        transcripts = []
        wires: list[str] = []
        for name, data in sorted(artifacts.items()):
            if name == "review.json":
                self._write_exclusive(f"{slug}.review.json", data, mode=0o644)
                named["review_artifact"] = f"{slug}.review.json"
            elif name == "patch.diff":
                self._write_exclusive(f"{slug}.patch", data, mode=0o644)
                named["patch_artifact"] = f"{slug}.patch"
            elif name.startswith("transcripts/"):
                self._write_exclusive(name, data, mode=0o600)
                transcripts.append(
                    {
                        "path": name,
                        "sha256": hashlib.sha256(data).hexdigest(),
                        "bytes": len(data),
                        "source": TRANSCRIPT_SOURCE,
                    }
                )
            elif name.startswith("wire/"):
                self._write_exclusive(name, data, mode=0o644)
                wires.append(name)
            elif name.startswith("records/") and name.removeprefix("records/") in RECORD_FILES:
                self._append(name.removeprefix("records/"), data)
            else:
                raise OutputDirError(f"unknown artifact kind {name!r}")
        stored = row.replace(**named, transcript_artifacts=transcripts, wire_artifacts=wires)
        self._append(RESULTS_FILE, stored_line(stored).encode("utf-8"))
        return stored

    def _append(self, name: str, data: bytes) -> None:
        """Append a cell's JSON lines to a sweep-level record file (fsynced, never via a symlink)."""
        fd = os.open(self.root / name, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW, 0o644)
        try:
            complete = os.fstat(fd).st_size
            try:
                _write_all(fd, data)
            except OSError:
                # A half-written line would corrupt every reader of the file: cut it off.
                os.ftruncate(fd, complete)
                raise
        finally:
            os.close(fd)

    def write_jsonl(self, name: str, records: list[Mapping[str, Any]]) -> Path:
        """Replace ``name`` with one JSON line per record (atomic rename, fsynced)."""
        path = self.root / name
        atomic_write_text(path, jsonl_text(records))
        return path

    def replace_folder(self, name: str, files: Mapping[str, bytes]) -> Path:
        """Replace the folder ``name`` with exactly ``files`` (paths ``name/<file>``), owner-only.

        A report-like folder we own (the cell viewer's data files, which quote transcripts: dir
        0700, files 0600 like ``transcripts/``). Written beside it, then swapped in by rename, so
        a reader sees the old folder or the new one and a re-render leaves no stale file.
        """
        final = self.root / name
        fresh = self.root / f".{name}.new"
        stale = self.root / f".{name}.old"
        try:
            for leftover in (fresh, stale):
                if leftover.is_symlink() or leftover.is_file():
                    leftover.unlink()
                elif leftover.exists():
                    shutil.rmtree(leftover)
            fresh.mkdir(mode=0o700)
            for relative, data in sorted(files.items()):
                head, _, base = relative.partition("/")
                if head != name or not base or "/" in base or base.startswith("."):
                    raise OutputDirError(f"{relative!r} is not a file directly under {name}/")
                # Not fsynced, like the reports: rendered again from the rows at any time.
                with open(fresh / base, "xb", opener=_owner_only) as handle:
                    handle.write(data)
            if final.is_symlink() or final.is_file():
                raise OutputDirError(f"{final} is not a directory this sweep wrote")
            if final.exists():
                os.rename(final, stale)
            os.rename(fresh, final)
            if stale.exists():
                shutil.rmtree(stale)
        except OSError as err:
            raise OutputWriteError(err.errno, f"cannot write {final}: {err.strerror or err}") from err
        return final

    def write_text(self, name: str, text: str) -> Path:
        """Write a report atomically (temporary file, then rename); ``OutputWriteError`` on failure."""
        path = self.root / name
        tmp = path.with_name(f".{name}.tmp")
        try:
            tmp.write_text(text, encoding="utf-8")
            os.replace(tmp, path)
        except OSError as err:
            tmp.unlink(missing_ok=True)
            raise OutputWriteError(err.errno, f"cannot write {path}: {err.strerror or err}") from err
        return path
