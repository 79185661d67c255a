"""Rules of the patch view's recording step: exact paths, exact modes, bounded and race-safe reads.

Each test states one rule of ``record``: every byte of a path reaches git unchanged (a backslash
is data, not an escape), git's mode is executable exactly when any execute bit is set, the
snapshot cap counts the sum of all files and refuses only above it, a file is read without
following a link and must still have the size it had when the walk saw it, and churn is refused
rather than undercounted when the numstat is cut at its cap.
"""

from __future__ import annotations

import errno
import io
import shutil
from pathlib import Path

import pytest

from workflow_bench.workspace import git as git_module
from workflow_bench.workspace import patch as patch_module
from workflow_bench.workspace.patch import PatchView
from workflow_bench.workspace.snapshot import WorkspaceLimitError

pytestmark = pytest.mark.component


@pytest.fixture
def workspace(tmp_path, git_bin) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "keep.txt").write_text("keep\n")
    return ws


def _changed(tmp_path: Path, ws: Path, change) -> bytes:
    view = PatchView(tmp_path / "view.git")
    view.record(ws, "base")
    change(ws)
    view.record(ws, "after")
    patch, _ = view.diff("base", "after")
    return patch


def test_a_backslash_in_a_path_is_data_not_an_escape(tmp_path, workspace) -> None:
    patch = _changed(tmp_path, workspace, lambda ws: (ws / "a\\nb [x].txt").write_text("x\n"))
    # git quotes the name in the patch: one literal backslash shows as two, never as a newline
    assert b'"b/a\\\\nb [x].txt"' in patch, patch


@pytest.mark.parametrize(
    ("mode", "git_mode"),
    [(0o644, b"100644"), (0o744, b"100755"), (0o654, b"100755"), (0o645, b"100755"), (0o600, b"100644")],
)
def test_any_execute_bit_makes_the_file_executable_in_git(tmp_path, workspace, mode, git_mode) -> None:
    def add(ws: Path) -> None:
        (ws / "tool").write_text("run\n")
        (ws / "tool").chmod(mode)

    patch = _changed(tmp_path, workspace, add)
    assert b"new file mode " + git_mode in patch, patch


def test_the_snapshot_cap_is_on_the_sum_of_all_files_and_refuses_only_above_it(
    tmp_path, workspace, monkeypatch
) -> None:
    (workspace / "keep.txt").write_text("12345")  # 5 bytes
    (workspace / "b.txt").write_text("123456")  # 6 bytes: 11 in all
    monkeypatch.setattr(patch_module, "MAX_SNAPSHOT_BYTES", 11)
    PatchView(tmp_path / "at-cap.git").record(workspace, "base")  # exactly at the cap: recorded
    monkeypatch.setattr(patch_module, "MAX_SNAPSHOT_BYTES", 10)
    with pytest.raises(WorkspaceLimitError, match="workspace exceeds 10 bytes"):
        PatchView(tmp_path / "over-cap.git").record(workspace, "base")  # no file alone is over 10


def test_a_file_is_never_read_through_a_link(tmp_path) -> None:
    target = tmp_path / "secret"
    target.write_text("secret\n")
    link = tmp_path / "link"
    link.symlink_to(target)
    with pytest.raises(OSError) as raised:
        _copy(str(link), len("secret\n"))  # a file swapped for a link after the walk
    assert raised.value.errno == errno.ELOOP


def test_a_file_that_changed_size_since_the_walk_is_refused(tmp_path) -> None:
    grown = tmp_path / "grown"
    grown.write_text("12345")
    with pytest.raises(WorkspaceLimitError, match="changed size while it was recorded"):
        _copy(str(grown), 3)  # the walk saw 3 bytes; 5 are there now
    with pytest.raises(WorkspaceLimitError, match="changed size while it was recorded"):
        _copy(str(grown), 7)  # or shrank
    assert _copy(str(grown), 5) == b"12345"


def _copy(path: str, size: int) -> bytes:
    """What the import stream receives for a file the walk saw at ``size`` bytes (in chunks)."""
    out = io.BytesIO()
    patch_module._Content(path, size).copy_to(out)
    return out.getvalue()


def test_churn_is_never_a_silent_undercount_of_a_cut_numstat(tmp_path, workspace, monkeypatch) -> None:
    def add(ws: Path) -> None:
        for n in range(4):
            (ws / f"new-{n}.txt").write_text("x\n")  # "1\t0\tnew-N.txt\n": 14 bytes a path

    view = PatchView(tmp_path / "view.git")
    view.record(workspace, "base")
    add(workspace)
    view.record(workspace, "after")
    monkeypatch.setattr(patch_module, "MAX_NUMSTAT_BYTES", 4 * 14)  # exactly the four lines: counted
    assert view.diff("base", "after")[1]["diff_files"] == 4
    monkeypatch.setattr(patch_module, "MAX_NUMSTAT_BYTES", 4 * 14 - 1)  # one byte short: refused
    with pytest.raises(WorkspaceLimitError, match="numstat exceeds 55 bytes"):
        view.diff("base", "after")


# Each seal of the harness's git (workspace.git) against the host's configuration must hold on its
# own: the tests below breach every other way in (by adding a hostile source to the environment
# every harness git command gets) and check that the one seal left still keeps the patch exact.
HOSTILE = "[diff]\n\tnoprefix = true\n[core]\n\tquotePath = false\n\tattributesFile = {attrs}\n"


def _hostile_config(tmp_path: Path) -> Path:
    attrs = tmp_path / "hostile-attributes"
    attrs.write_text("* -diff\n")  # every file shown as binary
    config = tmp_path / "hostile-config"
    config.write_text(HOSTILE.format(attrs=attrs))
    return config


def _exact_patch(tmp_path: Path, ws: Path) -> bytes:
    def change(w: Path) -> None:
        (w / "keep.txt").write_text("changed\n")
        (w / "caf\u00e9.txt").write_text("new\n")

    patch = _changed(tmp_path, ws, change)
    assert b"--- a/keep.txt\n+++ b/keep.txt\n" in patch, patch  # prefixes kept: no noprefix
    assert b"-keep\n+changed\n" in patch, patch  # a text diff: no hostile attributes
    assert b'"b/caf\\303\\251.txt"' in patch, patch  # non-ASCII quoted: quotePath stays true
    return patch


def test_a_hostile_system_config_is_never_read(tmp_path, workspace, monkeypatch) -> None:
    env = {**git_module._FIXED_ENV, "GIT_CONFIG_SYSTEM": str(_hostile_config(tmp_path))}
    monkeypatch.setattr(git_module, "_FIXED_ENV", env)
    _exact_patch(tmp_path, workspace)


def test_a_hostile_home_config_is_never_read(tmp_path, workspace, monkeypatch) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / ".gitconfig").write_text(_hostile_config(tmp_path).read_text())
    (home / ".config" / "git").mkdir(parents=True)
    (home / ".config" / "git" / "config").write_text(_hostile_config(tmp_path).read_text())
    env = {**git_module._FIXED_ENV, "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config")}
    monkeypatch.setattr(git_module, "_FIXED_ENV", env)
    _exact_patch(tmp_path, workspace)


def test_inherited_config_parameters_are_overridden_by_the_views_own(
    tmp_path, workspace, monkeypatch
) -> None:
    attrs = tmp_path / "hostile-attributes"
    attrs.write_text("* -diff\n")
    inherited = f"'core.quotepath'='false' 'core.attributesfile'='{attrs}'"
    monkeypatch.setattr(
        git_module, "_FIXED_ENV", {**git_module._FIXED_ENV, "GIT_CONFIG_PARAMETERS": inherited}
    )
    _exact_patch(tmp_path, workspace)


def test_a_normal_change_of_many_paths_is_counted_whole(tmp_path, workspace) -> None:
    def add(ws: Path) -> None:
        for n in range(40):
            (ws / f"module_{n:02d}.py").write_text(f"value = {n}\n")

    view = PatchView(tmp_path / "view.git")
    view.record(workspace, "base")
    add(workspace)
    view.record(workspace, "after")
    _, churn = view.diff("base", "after")
    assert churn["diff_files"] == 40 and churn["diff_insertions"] == 40, churn


def test_a_failed_recording_raises_what_stopped_it_not_a_cleanup_error(tmp_path, workspace) -> None:
    view = PatchView(tmp_path / "view.git")
    shutil.rmtree(view.git_dir)  # the stream beside the view cannot even be created
    with pytest.raises(FileNotFoundError) as raised:
        view.record(workspace, "base")
    assert raised.value.__context__ is None, raised.value.__context__  # nothing chained on top
