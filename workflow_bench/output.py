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
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

RESULTS_FILE = "results.jsonl"
# Sweep-level JSON-lines files a cell may add to through ``records/<name>`` artifacts: what the
# model side observed per request (the scripted provider's ledger, the gateway's usage log).
RECORD_FILES = frozenset({"provider-ledger.jsonl", "gateway-usage.jsonl"})
TRANSCRIPT_SOURCE = "parent-captured-stream-json"


class OutputDirError(ValueError):
    pass


def prepare_output_dir(path: Path) -> Path:
    """Create ``path`` (refusing a non-empty one: rows from two sweeps must never mix)."""
    if path.exists() and (not path.is_dir() or any(path.iterdir())):
        raise OutputDirError(f"--out {path} already exists and is not an empty directory; choose a new one")
    path.mkdir(parents=True, exist_ok=True)
    return path


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
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        return path

    def persist(self, slug: str, row: Mapping[str, Any], artifacts: Mapping[str, bytes]) -> dict[str, Any]:
        """Write the cell's artifacts, then append its row (fsynced). Returns the row as stored."""
        stored = dict(row)
        transcripts = []
        with self._lock:
            for name, data in sorted(artifacts.items()):
                if name == "review.json":
                    self._write_exclusive(f"{slug}.review.json", data, mode=0o644)
                    stored["review_artifact"] = f"{slug}.review.json"
                elif name == "patch.diff":
                    self._write_exclusive(f"{slug}.patch", data, mode=0o644)
                    stored["patch_artifact"] = f"{slug}.patch"
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
                elif name.startswith("records/") and name.removeprefix("records/") in RECORD_FILES:
                    self._append(name.removeprefix("records/"), data)
                else:
                    raise OutputDirError(f"unknown artifact kind {name!r}")
            stored["transcript_artifacts"] = transcripts
            line = json.dumps(stored, sort_keys=True, ensure_ascii=False, allow_nan=False) + "\n"
            with open(self.root / RESULTS_FILE, "a", encoding="utf-8") as handle:
                handle.write(line)
                handle.flush()
                os.fsync(handle.fileno())
        return stored

    def _append(self, name: str, data: bytes) -> None:
        """Append a cell's JSON lines to a sweep-level record file (fsynced, never via a symlink)."""
        fd = os.open(self.root / name, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW, 0o644)
        with os.fdopen(fd, "ab") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())

    def write_jsonl(self, name: str, records: list[Mapping[str, Any]]) -> Path:
        """Replace ``name`` with one JSON line per record (atomic rename, fsynced)."""
        text = "".join(json.dumps(r, sort_keys=True, ensure_ascii=False) + "\n" for r in records)
        path = self.root / name
        tmp = path.with_name(f".{name}.tmp")
        with open(tmp, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
        return path

    def write_text(self, name: str, text: str) -> Path:
        path = self.root / name
        tmp = path.with_name(f".{name}.tmp")
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
        return path


def load_rows(path: Path) -> list[dict[str, Any]]:
    rows = []
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                rows.append(json.loads(line))
    return rows
