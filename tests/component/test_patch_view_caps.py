"""The patch view's host cost is capped, whatever the agent writes (issue 30, item 4).

A file over ``MAX_BLOB_BYTES`` is recorded as a one-line stand-in (size and sha256), in the
template's view and the cell's alike; a cell's view imports at most its budget of content, the
smallest files first; content is copied in chunks (the runner never holds a file whole); a
stand-in is never handed back as a file's bytes. Negative controls: with the caps lifted the same
changes are stored whole (the view's objects grow by the file's size) and the peak allocation
grows with the file.
"""

from __future__ import annotations

import hashlib
import os
import tracemalloc
from pathlib import Path

import pytest

from workflow_bench.workspace import patch as patch_module
from workflow_bench.workspace.patch import STAND_IN, PatchView
from workflow_bench.workspace.snapshot import WorkspaceLimitError, scan_workspace

pytestmark = pytest.mark.component
MIB = 1024 * 1024


def _objects_bytes(view: PatchView) -> int:
    total = 0
    for dirpath, _dirs, files in os.walk(view.git_dir / "objects"):
        total += sum(os.lstat(os.path.join(dirpath, f)).st_size for f in files)
    return total


def _cell(tmp_path: Path, change, *, budget: int | None) -> tuple[PatchView, bytes, str, str]:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.py").write_text("x = 1\n")
    before = scan_workspace(ws).state
    template = PatchView(tmp_path / "template.git")
    base = template.record_state(ws, "base", before)
    change(ws)
    after = scan_workspace(ws, previous=before).state
    cell = PatchView(tmp_path / "cell.git", alternate=template, budget_bytes=budget)
    keys = set(before.entries) | set(after.entries)
    changed = [p for p in keys if before.entries.get(p) != after.entries.get(p)]
    commit = cell.record_changes(ws, "after", parent=base, before=before, after=after, paths=changed)
    patch, _churn = cell.diff(base, commit)
    return cell, patch, base, commit


def test_a_file_over_the_per_file_cap_is_a_stand_in_never_stored_or_held(tmp_path, git_bin, monkeypatch):
    monkeypatch.setattr(patch_module, "MAX_BLOB_BYTES", 1 * MIB)
    data = os.urandom(16 * MIB)

    def write(ws: Path) -> None:
        (ws / "big.bin").write_bytes(data)
        (ws / "a.py").write_text("x = 2\n")

    tracemalloc.start()
    try:
        cell, patch, _base, commit = _cell(tmp_path, write, budget=None)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    digest = hashlib.sha256(data).hexdigest()
    assert STAND_IN + b": %d bytes, sha256 %s" % (len(data), digest.encode()) in patch
    assert b"+x = 2" in patch, "a small change beside it is still a real diff"
    assert _objects_bytes(cell) < MIB, "the big file was stored"
    # The scan and the copy read 1 MiB chunks: the peak is a few chunks, not the file.
    assert peak < 4 * MIB, f"peak allocation {peak} bytes"
    assert cell.stand_ins == 1
    with pytest.raises(WorkspaceLimitError, match=r"big\.bin"):
        cell.read(commit, "big.bin")
    assert cell.read(commit, "a.py") == b"x = 2\n"


def test_without_the_per_file_cap_the_file_is_stored_whole(tmp_path, git_bin, monkeypatch):
    """Negative control of the test above: the cap lifted, the view stores the file's bytes."""
    monkeypatch.setattr(patch_module, "MAX_BLOB_BYTES", 1 << 40)
    data = os.urandom(6 * MIB)
    cell, patch, _base, commit = _cell(tmp_path, lambda ws: (ws / "big.bin").write_bytes(data), budget=None)
    assert STAND_IN not in patch and _objects_bytes(cell) > 6 * MIB
    assert cell.read(commit, "big.bin") == data


def test_a_cells_view_imports_at_most_its_budget_smallest_first(tmp_path, git_bin):
    sizes = {"small.txt": 1000, "mid.bin": 300_000, "large.bin": 700_000}

    def write(ws: Path) -> None:
        for name, size in sizes.items():
            (ws / name).write_bytes(os.urandom(size))

    cell, patch, _base, commit = _cell(tmp_path, write, budget=400_000)
    assert cell.stand_ins == 1
    assert cell.read(commit, "small.txt") and len(cell.read(commit, "mid.bin")) == 300_000
    with pytest.raises(WorkspaceLimitError):
        cell.read(commit, "large.bin")
    assert STAND_IN + b": 700000 bytes" in patch
    assert _objects_bytes(cell) < 400_000 + 100_000


def test_a_file_that_grows_while_recorded_is_refused(tmp_path, git_bin):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "f").write_text("short\n")
    state = scan_workspace(ws).state
    (ws / "f").write_text("much longer now\n")
    with pytest.raises(WorkspaceLimitError, match="changed size"):
        PatchView(tmp_path / "v.git").record_state(ws, "base", state)
