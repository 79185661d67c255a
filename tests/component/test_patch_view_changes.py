"""The incremental patch view (issue 26): a template recorded once, a cell's view on top of it.

The rule pinned here: for any change, the patch and churn a cell's view produces from the
template's recorded state plus only the changed paths (``record_state`` then ``record_changes``
in a view borrowing the template's objects) are byte-identical to a full walk of both trees
(``record`` twice, then ``diff``). The full walk is the negative control of every case: a change
the incremental path dropped, mis-moded or mis-named would differ from it. Also: a cell that
changed nothing returns the template's commit and never creates its repository; a cell's view
holds only the objects it added, and never writes the template's.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from workflow_bench.workspace import patch as patch_module
from workflow_bench.workspace.patch import PatchView
from workflow_bench.workspace.snapshot import scan_workspace

pytestmark = pytest.mark.component
EXCLUDED = ("deps", "/vendor/lib/")
ODD = os.fsdecode(b'odd \\ "q"\tname\xff.txt')


@pytest.fixture
def workspace(tmp_path, git_bin) -> Path:
    ws = tmp_path / "ws"
    (ws / "src" / "deep").mkdir(parents=True)
    (ws / "deps").mkdir()
    (ws / "vendor" / "lib").mkdir(parents=True)
    (ws / "src" / "a.txt").write_text("one\ntwo\nthree\n")
    (ws / "src" / "deep" / "b.txt").write_text("bee\n")
    (ws / "run.sh").write_text("#!/bin/sh\necho hi\n")
    (ws / "gone.txt").write_text("to be removed\n")
    (ws / "becomes_dir").write_text("a file for now\n")
    (ws / ODD).write_text("odd\n")
    (ws / "deps" / "pkg.txt").write_text("dependency\n")
    (ws / "vendor" / "lib" / "v.txt").write_text("vendored\n")
    (ws / "vendor" / "kept.txt").write_text("kept\n")
    os.symlink("src/a.txt", ws / "link")
    return ws


def _full(tmp_path: Path, before: Path, after: Path) -> tuple[bytes, dict[str, int]]:
    view = PatchView(tmp_path / "full.git", excluded=EXCLUDED)
    view.record(before, "base")
    view.record(after, "after")
    return view.diff("base", "after")


def _incremental(tmp_path: Path, ws: Path, change) -> tuple[PatchView, PatchView, str, str]:
    template_state = scan_workspace(ws).state
    template = PatchView(tmp_path / "template.git", excluded=EXCLUDED)
    base = template.record_state(ws, "base", template_state)
    change(ws)
    scan = scan_workspace(ws, previous=template_state)
    cell = PatchView(tmp_path / "cell.git", excluded=EXCLUDED, alternate=template, create=False)
    after = cell.record_changes(
        ws,
        "after",
        parent=base,
        before=template_state,
        after=scan.state,
        paths=scan.state.changed_since(template_state, scan.changed),
    )
    return template, cell, base, after


def _edit(ws: Path) -> None:
    (ws / "src" / "a.txt").write_text("one\n2\nthree\nfour\n")
    (ws / "src" / "new" / "c.txt").parent.mkdir()
    (ws / "src" / "new" / "c.txt").write_text("sea\n")
    (ws / "gone.txt").unlink()
    (ws / "run.sh").chmod(0o755)
    (ws / "src" / "deep" / "b.txt").chmod(0o641)  # any execute bit, even only the others': executable
    (ws / "src" / "a.txt").chmod(0o600)  # no execute bit: a plain file
    (ws / "link").unlink()
    os.symlink("src/deep/b.txt", ws / "link")
    os.symlink("nowhere", ws / "new_link")
    (ws / "becomes_dir").unlink()
    (ws / "becomes_dir").mkdir()
    (ws / "becomes_dir" / "inside.txt").write_text("inside\n")
    (ws / ODD).write_text("odd, changed\n")
    (ws / os.fsdecode(b'new odd \\ "\xfe.txt')).write_bytes(b"\x00\x01binary\xff")
    (ws / "deps" / "pkg.txt").write_text("dependency changed\n")  # excluded: never in the patch
    (ws / "vendor" / "lib" / "v.txt").write_text("vendored changed\n")  # excluded
    (ws / "vendor" / "kept.txt").write_text("kept, changed\n")  # beside an excluded path: kept
    (ws / "sub" / ".git").mkdir(parents=True)
    (ws / "sub" / ".git" / "config").write_text("[core]\n")  # git cannot store a .git component
    (ws / "sub" / ".GIT").mkdir()
    (ws / "sub" / ".GIT" / "x").write_text("x\n")


def test_a_cells_incremental_patch_is_byte_identical_to_a_full_walk(tmp_path, workspace) -> None:
    before = tmp_path / "before"
    shutil.copytree(workspace, before, symlinks=True)
    _, cell, base, after = _incremental(tmp_path, workspace, _edit)
    patch, churn = cell.diff(base, after)
    assert (patch, churn) == _full(tmp_path, before, workspace)
    # and the full walk itself saw the change (the comparison is not of two empty patches)
    for path in (b"src/a.txt", b"src/new/c.txt", b"gone.txt", b"run.sh", b"link", b"becomes_dir/inside.txt"):
        assert b"diff --git a/" + path in patch, path
    assert (
        patch.count(b"new mode 100755") == 2
        and b"new file mode 120000" in patch
        and b"deleted file mode" in patch
    )
    assert b"vendor/kept.txt" in patch
    for hidden in (b"deps/", b"vendor/lib/", b"sub/.git", b"sub/.GIT"):
        assert hidden not in patch, hidden
    assert churn["diff_files"] == patch.count(b"diff --git ")


def test_a_deletion_alone_and_an_odd_name_alone_are_recorded(tmp_path, workspace) -> None:
    before = tmp_path / "before"
    shutil.copytree(workspace, before, symlinks=True)

    def delete(ws: Path) -> None:
        (ws / ODD).unlink()

    _, cell, base, after = _incremental(tmp_path, workspace, delete)
    patch, churn = cell.diff(base, after)
    assert (patch, churn) == _full(tmp_path, before, workspace)
    assert churn == {"diff_files": 1, "diff_insertions": 0, "diff_deletions": 1}


def test_the_template_view_holds_the_whole_tree_at_its_base(tmp_path, workspace) -> None:
    state = scan_workspace(workspace).state
    template = PatchView(tmp_path / "template.git", excluded=EXCLUDED)
    base = template.record_state(workspace, "base", state)
    full = PatchView(tmp_path / "full.git", excluded=EXCLUDED)
    assert base == full.record(workspace, "base")  # the same tree, the same fixed committer: one SHA


def test_a_cell_that_changed_nothing_is_its_templates_commit_without_a_repository(
    tmp_path, workspace
) -> None:
    def touch_excluded_only(ws: Path) -> None:
        (ws / "deps" / "pkg.txt").write_text("dependency changed\n")

    _, cell, base, after = _incremental(tmp_path, workspace, touch_excluded_only)
    assert after == base and not cell.git_dir.exists()
    assert cell.diff(base, after) == (b"", {"diff_files": 0, "diff_insertions": 0, "diff_deletions": 0})


def test_a_cells_view_borrows_the_templates_objects_and_writes_only_its_own(tmp_path, workspace) -> None:
    template, cell, base, after = _incremental(
        tmp_path, workspace, lambda ws: (ws / "src" / "a.txt").write_text("changed\n")
    )

    def objects(view: PatchView) -> set[str]:
        out = subprocess.run(
            [
                "git",
                f"--git-dir={view.git_dir}",
                "cat-file",
                "--batch-all-objects",
                "--batch-check=%(objectname)",
            ],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        return set(out.split())

    template_before = objects(template)
    alternates = (cell.git_dir / "objects" / "info" / "alternates").read_text()
    assert alternates == f"{(template.git_dir / 'objects').resolve()}\n"
    patch, _ = cell.diff(base, after)
    assert b"-one" in patch and b"+changed" in patch
    assert objects(template) == template_before  # the template's view is never written by a cell
    own = subprocess.run(
        ["find", str(cell.git_dir / "objects"), "-type", "f", "-path", "*/objects/??/*"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    # one blob, the trees from src/ up, one commit: nothing of the unchanged template copied
    assert 0 < len(own) <= 4


def test_churn_counts_a_binary_file_as_zero_lines_and_a_blank_name_as_a_file(tmp_path, workspace) -> None:
    def change(ws: Path) -> None:
        (ws / "blob.bin").write_bytes(b"\x00\x01\x02binary")
        (ws / " ").write_text("a file named by one space\nsecond line\n")

    _, cell, base, after = _incremental(tmp_path, workspace, change)
    patch, churn = cell.diff(base, after)
    assert b"GIT binary patch" in patch
    assert churn == {"diff_files": 2, "diff_insertions": 2, "diff_deletions": 0}


def test_recorded_states_are_reachable_by_their_ref_names(tmp_path, workspace) -> None:
    template, cell, base, after = _incremental(
        tmp_path, workspace, lambda ws: (ws / "src" / "a.txt").write_text("changed\n")
    )
    assert template.diff("base", base) == (b"", {"diff_files": 0, "diff_insertions": 0, "diff_deletions": 0})
    by_name = cell.diff(base, "after")
    assert by_name == cell.diff(base, after) and b"+changed" in by_name[0]


def test_each_import_gets_a_timeout_scaled_to_what_it_imports(tmp_path, workspace, monkeypatch) -> None:
    """Issue 26: a git step's bound grows with its bytes and paths (a 1 GiB tree cannot meet a fixed one)."""
    asked: list[dict[str, int]] = []
    real = patch_module.scaled_timeout

    def spy(**work: int) -> float:
        asked.append(work)
        return real(**work)

    monkeypatch.setattr(patch_module, "scaled_timeout", spy)
    state = scan_workspace(workspace).state  # what _incremental's template records

    def change(ws: Path) -> None:
        (ws / "src" / "a.txt").write_text("x" * 5000)
        (ws / "gone.txt").unlink()
        (ws / "run.sh").unlink()

    _incremental(tmp_path, workspace, change)
    kept = [
        p
        for p, e in state.entries.items()
        if e.startswith(("file:", "link:")) and not p.startswith(("deps/", "vendor/lib/"))
    ]
    assert asked[0] == {"total_bytes": state.total_bytes, "entries": len(kept)}
    assert asked[1:] == [{"total_bytes": 5000, "entries": 3}]  # one written, two deleted


def test_the_saved_patch_is_cut_at_300_000_bytes_then_marked(tmp_path, workspace) -> None:
    """README: at most 300 000 bytes of patch, then a truncation marker."""
    before = tmp_path / "before"
    shutil.copytree(workspace, before, symlinks=True)
    (workspace / "big.txt").write_text(("z" * 99 + "\n") * 5000)
    patch, _ = _full(tmp_path, before, workspace)
    head, marker = patch.split(b"\n[truncated at ", 1)
    assert len(head) == 300_000 and marker == b"300000 bytes]\n"


def test_a_cells_view_reads_any_recorded_file_its_own_or_borrowed(tmp_path, workspace) -> None:
    from workflow_bench.process import ProcessError

    _, cell, base, after = _incremental(tmp_path, workspace, _edit)
    assert cell.read(base, "src/a.txt") == b"one\ntwo\nthree\n"  # the template's object, borrowed
    assert cell.read(after, "src/a.txt") == b"one\n2\nthree\nfour\n"
    assert cell.read(after, "link") == b"src/deep/b.txt"  # a link reads as its target
    assert cell.read(base, ODD) == b"odd\n"
    with pytest.raises(ProcessError, match=r"^read 'gone.txt' from the harness patch view: "):
        cell.read(after, "gone.txt")
