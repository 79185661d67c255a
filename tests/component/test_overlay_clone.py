"""The overlay clone (issue 26): a cell's workspace as an overlay of its template, scanned through
its upper layer only (``sandbox._overlay``, ``workspace.snapshot.scan_overlay``).

The rule pinned here: after any change made through the overlay, ``scan_overlay`` (the template's
state plus only what the upper layer holds and held) gives exactly the entries and the changed
paths of a full walk of the merged tree (``scan_workspace``): the full walk is the negative
control of every case. Also: the template is never written, the cell's uid owns what it sees, and a
path created at one boundary and deleted by the next is seen gone (the ``seen`` set).
"""

from __future__ import annotations

import os
import shutil
import stat
import time
from dataclasses import replace
from pathlib import Path

import pytest

from tests.builders import missing_tool
from tests.conftest import needs_root
from workflow_bench.sandbox import unmount
from workflow_bench.sandbox._overlay import mount_overlay_clone, overlay_available
from workflow_bench.workspace import snapshot
from workflow_bench.workspace.snapshot import WorkspaceLimitError, scan_overlay, scan_workspace

pytestmark = pytest.mark.component
CELL_UID = 0x40000000 + 4242


@pytest.fixture
def template(tmp_path) -> Path:
    ws = tmp_path / "template"
    (ws / "src" / "deep").mkdir(parents=True)
    (ws / "pkg" / "sub").mkdir(parents=True)
    (ws / "src" / "a.txt").write_text("one\ntwo\n")
    (ws / "src" / "deep" / "b.txt").write_text("bee\n")
    (ws / "pkg" / "sub" / "m.py").write_text("x = 1\n")
    (ws / "pkg" / "n.py").write_text("y = 2\n")
    (ws / "run.sh").write_text("#!/bin/sh\n")
    (ws / "file_then_dir").write_text("a file\n")
    (ws / ".git").mkdir()
    (ws / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    os.symlink("src/a.txt", ws / "link")
    return ws


@pytest.fixture
def clone(tmp_path, template):
    needs_root("mounts an overlay")
    if not overlay_available(tmp_path):
        missing_tool("idmapped overlay layers (Linux 5.19+, root)")
    dest = tmp_path / "cell" / "workspace"
    dest.parent.mkdir()
    mount_overlay_clone(template, dest, layers=tmp_path / "cell" / "layers", host_uid=CELL_UID)
    yield dest, tmp_path / "cell" / "layers" / "upper"
    assert unmount(dest, what="the test's overlay").problem is None


def _edit(ws: Path) -> None:
    (ws / "src" / "a.txt").write_text("one\n2\n")  # a lower file changed
    (ws / "src" / "new").mkdir()  # a new directory with a file
    (ws / "src" / "new" / "c.txt").write_text("sea\n")
    (ws / "run.sh").chmod(0o755)  # metadata only


def _delete_dir(ws: Path) -> None:
    shutil.rmtree(ws / "pkg")  # a lower directory and its subtree: whiteout


def _rename_dir(ws: Path) -> None:
    os.rename(ws / "src", ws / "source")  # a lower directory moved: redirect


def _replace_dir(ws: Path) -> None:
    shutil.rmtree(ws / "src" / "deep")
    (ws / "src" / "deep").mkdir()  # opaque: the lower contents are hidden
    (ws / "src" / "deep" / "fresh.txt").write_text("fresh\n")


def _dir_to_link(ws: Path) -> None:
    outside = ws.parent.parent / "outside"  # a host directory holding the old children's names
    (outside / "sub").mkdir(parents=True)
    (outside / "n.py").write_text("host\n")
    (outside / "sub" / "m.py").write_text("host\n")
    shutil.rmtree(ws / "pkg")
    os.symlink(outside, ws / "pkg")  # the old children must never be stat'ed or read through it


def _file_to_dir(ws: Path) -> None:
    (ws / "file_then_dir").unlink()
    (ws / "file_then_dir").mkdir()
    (ws / "file_then_dir" / "inside.txt").write_text("in\n")


def _specials(ws: Path) -> None:
    os.mkfifo(ws / "fifo")
    (ws / "link").unlink()
    os.symlink("pkg/n.py", ws / "link")
    (ws / ".git" / "HEAD").write_text("changed, but .git is never in a state\n")


def _chmod_dir(ws: Path) -> None:
    (ws / "pkg" / "sub").chmod(0o700)  # a lower directory's own entry changes, its children do not


CHANGES = [_edit, _delete_dir, _rename_dir, _replace_dir, _dir_to_link, _file_to_dir, _specials, _chmod_dir]


@pytest.mark.parametrize("change", CHANGES, ids=lambda c: c.__name__.strip("_"))
def test_an_upper_layer_scan_equals_a_full_walk(clone, template, change):
    ws, upper = clone
    base = scan_workspace(template).state
    change(ws)
    full = scan_workspace(ws, previous=base)
    scan, seen = scan_overlay(ws, upper=upper, previous=base, seen=frozenset())
    assert dict(scan.state.entries) == dict(full.state.entries)
    assert scan.changed == full.changed and scan.changed
    assert scan.state.total_bytes == full.state.total_bytes
    assert seen >= {p for p in scan.changed if p in scan.state.entries}  # every path in the new state


def test_the_template_is_never_written_and_the_cell_uid_owns_the_clone(clone, template):
    ws, _upper = clone
    before = scan_workspace(template).state
    _edit(ws)
    _delete_dir(ws)
    assert dict(scan_workspace(template).state.entries) == dict(before.entries)
    assert (ws / "src" / "deep" / "b.txt").stat().st_uid == CELL_UID  # untouched: seen through the idmap
    assert (ws / "src" / "a.txt").stat().st_uid == CELL_UID  # copied up
    assert (template / "src" / "a.txt").stat().st_uid == 0


def test_a_path_created_then_deleted_between_boundaries_is_seen_gone(clone, template):
    ws, upper = clone
    state = scan_workspace(template).state
    (ws / "tmp.txt").write_text("scratch\n")
    (ws / "made").mkdir()
    (ws / "made" / "x").write_text("x\n")
    first, seen = scan_overlay(ws, upper=upper, previous=state, seen=frozenset())
    assert {"tmp.txt", "made", "made/x"} <= first.changed
    (ws / "tmp.txt").unlink()  # upper-only: leaves no whiteout, only ``seen`` remembers it
    shutil.rmtree(ws / "made")
    second, _ = scan_overlay(ws, upper=upper, previous=first.state, seen=seen)
    full = scan_workspace(ws, previous=first.state)
    assert dict(second.state.entries) == dict(full.state.entries)
    assert second.changed == full.changed == {"tmp.txt", "made", "made/x"}
    # Negative control: without ``seen`` the deletion would be missed.
    blind, _ = scan_overlay(ws, upper=upper, previous=first.state, seen=frozenset())
    assert "tmp.txt" in blind.state.entries


def test_an_unchanged_clone_reads_nothing(clone, template):
    ws, upper = clone
    state = scan_workspace(template).state
    scan, seen = scan_overlay(ws, upper=upper, previous=state, seen=frozenset())
    assert scan.changed == frozenset() and seen == frozenset() and scan.state.read == 0
    assert stat.S_ISDIR(os.lstat(ws).st_mode) and os.lstat(ws).st_uid == CELL_UID


def test_a_directory_turned_into_a_symlink_is_never_walked_through(clone, template):
    """A path seen at an earlier boundary (``pkg/n.py``) whose parent became a symlink to a host
    directory holding the same names: never stat'ed or read through the link."""
    ws, upper = clone
    state = scan_workspace(template).state
    (ws / "pkg" / "n.py").write_text("y = 3\n")
    first, seen = scan_overlay(ws, upper=upper, previous=state, seen=frozenset())
    assert "pkg/n.py" in seen
    _dir_to_link(ws)
    second, _ = scan_overlay(ws, upper=upper, previous=first.state, seen=seen)
    full = scan_workspace(ws, previous=first.state)
    assert dict(second.state.entries) == dict(full.state.entries)
    assert second.state.read == 1  # the link itself, nothing behind it


def test_only_what_changed_is_read_and_unchanged_paths_keep_their_entries(clone, template):
    ws, upper = clone
    state = scan_workspace(template).state
    _edit(ws)
    time.sleep(0.1)  # past the racy window: the keys below are trusted
    first, seen = scan_overlay(ws, upper=upper, previous=state, seen=frozenset())
    # a.txt, c.txt and the chmod-ed run.sh: never the untouched b.txt below the copied-up src/
    assert first.state.read == 3
    second, again = scan_overlay(ws, upper=upper, previous=first.state, seen=seen)
    assert second.changed == frozenset() and second.state.read == 0 and again == seen
    assert dict(second.state.entries) == dict(first.state.entries)


def test_a_file_changed_just_before_a_boundary_is_read_again_at_the_next(clone, template):
    ws, upper = clone
    state = scan_workspace(template).state
    (ws / "src" / "a.txt").write_text("changed\n")  # ctime within the racy window of the walk
    first, seen = scan_overlay(ws, upper=upper, previous=state, seen=frozenset())
    assert first.state.keys["src/a.txt"][4] == snapshot._NEVER
    second, _ = scan_overlay(ws, upper=upper, previous=first.state, seen=seen)
    assert second.state.read == 1 and second.changed == frozenset()


def test_a_wall_clock_stepped_back_falls_back_to_a_full_walk(clone, template):
    ws, upper = clone
    state = scan_workspace(template).state
    _edit(ws)
    first, seen = scan_overlay(ws, upper=upper, previous=state, seen=frozenset({"earlier"}))
    ahead = replace(first.state, clock=(first.state.clock[0] + 10**12, first.state.clock[1]))
    (ws / "pkg" / "n.py").write_text("y = 4\n")
    scan, seen_after = scan_overlay(ws, upper=upper, previous=ahead, seen=seen)
    full = scan_workspace(ws, previous=first.state)
    assert dict(scan.state.entries) == dict(full.state.entries)
    assert scan.changed == {"pkg/n.py"}
    assert scan.state.read == len([k for k in scan.state.keys])  # nothing reused: every file read
    assert seen_after >= seen | {"pkg/n.py"}


def test_paths_once_seen_and_gone_stay_gone(clone, template):
    ws, upper = clone
    state = scan_workspace(template).state
    (ws / "made" / "deep").mkdir(parents=True)
    (ws / "made" / "deep" / "x").write_text("x\n")
    first, seen = scan_overlay(ws, upper=upper, previous=state, seen=frozenset())
    shutil.rmtree(ws / "made")
    second, seen = scan_overlay(ws, upper=upper, previous=first.state, seen=seen)
    assert second.changed == {"made", "made/deep", "made/deep/x"}
    third, _ = scan_overlay(ws, upper=upper, previous=second.state, seen=seen)
    assert third.changed == frozenset() and dict(third.state.entries) == dict(second.state.entries)


def test_the_caps_hold_as_in_a_full_walk(clone, template, monkeypatch):
    ws, upper = clone
    state = scan_workspace(template).state
    _rename_dir(ws)  # a redirected directory: its lower subtree walked whole, nothing of it in upper
    total = len(scan_workspace(ws).state.entries)
    monkeypatch.setattr(snapshot, "MAX_SNAPSHOT_ENTRIES", total)
    assert len(scan_overlay(ws, upper=upper, previous=state, seen=frozenset())[0].state.entries) == total
    monkeypatch.setattr(snapshot, "MAX_SNAPSHOT_ENTRIES", total - 1)
    with pytest.raises(WorkspaceLimitError, match=f"over {total - 1} entries"):
        scan_overlay(ws, upper=upper, previous=state, seen=frozenset())
    monkeypatch.undo()
    # source/deep (only in the lower layer) is a directory one slash deep: both walks refuse a
    # depth cap of 1 and allow 2 (the upper layer alone would never show it).
    for cap, refused in ((2, False), (1, True)):
        monkeypatch.setattr(snapshot, "MAX_SNAPSHOT_DEPTH", cap)
        for scan in (
            lambda: scan_workspace(ws),
            lambda: scan_overlay(ws, upper=upper, previous=state, seen=frozenset()),
        ):
            if refused:
                with pytest.raises(WorkspaceLimitError, match="deeper than"):
                    scan()
            else:
                scan()


def test_the_byte_cap_and_an_upper_layer_past_the_depth_cap_hold(clone, template, monkeypatch):
    ws, upper = clone
    state = scan_workspace(template).state
    (ws / "a" / "b").mkdir(parents=True)  # only in the upper layer: its own walk refuses it
    total = scan_workspace(ws).state.total_bytes
    monkeypatch.setattr(snapshot, "MAX_SNAPSHOT_BYTES", total)
    scan_overlay(ws, upper=upper, previous=state, seen=frozenset())
    monkeypatch.setattr(snapshot, "MAX_SNAPSHOT_BYTES", total - 1)
    with pytest.raises(WorkspaceLimitError, match=f"exceeds {total - 1} bytes"):
        scan_overlay(ws, upper=upper, previous=state, seen=frozenset())
    monkeypatch.undo()
    monkeypatch.setattr(snapshot, "MAX_SNAPSHOT_DEPTH", 1)
    with pytest.raises(WorkspaceLimitError, match="nested deeper than 1 levels"):
        scan_overlay(ws, upper=upper, previous=state, seen=frozenset())
