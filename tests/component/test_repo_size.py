"""Issue 26: what a large repository must not break, and what per-cell work must not cost.

- The template is one pack built with plumbing, and no harness git command starts automatic gc
  (a detached ``gc --auto`` deleted a template's object directories while cells copied them).
- A busy unmount is retried, then detached lazily: never a failure of the cell.
- A commit's tree over the task caps is refused at bind time, naming the task and the cap.
- Git time bounds scale with the work.
- Waiting for a subprocess, removing a tree and scanning a workspace are correct without their
  old costs (no polling sleep, no ``rm`` subprocess, only changed files read).
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
from pathlib import Path

import pytest
import yaml

from tests.builders import git_in, missing_tool
from tests.conftest import needs_root
from workflow_bench.process import run_process
from workflow_bench.sandbox import unmount
from workflow_bench.taskspec import repos
from workflow_bench.taskspec import spec as taskspec
from workflow_bench.taskspec.spec import TaskFileError, bind_tasks, load_task_file
from workflow_bench.workspace.clone import build_template, copy_clone
from workflow_bench.workspace.git import GIT_TIMEOUT_S, git_output, scaled_timeout
from workflow_bench.workspace.remove import remove_tree
from workflow_bench.workspace.snapshot import scan_workspace

pytestmark = pytest.mark.component
# git's gc.auto default: over this many loose objects, a porcelain command starts `gc --auto`.
GC_AUTO_LOOSE = 6700


def _objects(repo: Path) -> dict[str, int]:
    counts = {}
    for line in git_in(repo, "count-objects", "-v").splitlines():
        key, _, value = line.partition(": ")
        counts[key] = int(value) if value.isdigit() else 0
    return counts


@pytest.fixture(scope="module")
def many_files(tmp_path_factory) -> tuple[Path, str]:
    """A one-commit source repository with more files than gc.auto's loose-object threshold."""
    repo = tmp_path_factory.mktemp("many") / "src"
    for index in range(GC_AUTO_LOOSE + 300):
        directory = repo / f"d{index // 500:02d}"
        directory.mkdir(parents=True, exist_ok=True)
        (directory / f"f{index:05d}.txt").write_text(f"file {index}\n")
    git_in(repo, "init", "-q", "-b", "main")
    git_in(repo, "-c", "gc.auto=0", "add", "-A")
    git_in(repo, "-c", "gc.auto=0", "commit", "-q", "-m", "many")
    git_in(repo, "repack", "-a", "-d", "-q")
    return repo, git_in(repo, "rev-parse", "HEAD").strip()


def test_a_template_is_one_pack_and_no_gc_runs_behind_the_copies(many_files, tmp_path) -> None:
    """The old build (checkout, ``add -A``, ``commit``) left ~7k loose objects and a detached
    ``gc --auto`` repacking (and deleting) them while cells copied the template."""
    repo, sha = many_files
    template = tmp_path / "template"
    build_template(source_repo=repo, sha=sha, dest=template)
    counts = _objects(template)
    assert counts["count"] <= 1 and counts["packs"] == 1, counts  # loose: the snapshot commit alone
    assert not (template / ".git" / "gc.pid").exists() and not (template / ".git" / "gc.log").exists()
    # Every file of the task's tree, and a copy of the template is the same tree, byte for byte.
    clone = tmp_path / "clone"
    copy_clone(template, clone)
    assert git_in(clone, "status", "--porcelain") == ""
    assert git_in(clone, "rev-parse", "HEAD^{tree}") == git_in(repo, "rev-parse", "HEAD^{tree}")


def test_no_harness_git_command_starts_automatic_gc(tmp_path) -> None:
    """A harness ``git commit`` in a repository over the loose-object threshold (what a template
    with task assets or seeded skills is after ``add``) must not leave a gc running."""
    repo = tmp_path / "loose"
    repo.mkdir()
    git_in(repo, "init", "-q", "-b", "main")
    blobs = b"".join(f"blob {i}\n".encode() for i in range(2 * GC_AUTO_LOOSE))  # gc --auto samples
    paths = tmp_path / "paths"
    paths.mkdir()
    names = []
    for index, line in enumerate(blobs.splitlines()):
        path = paths / f"{index}"
        path.write_bytes(line)
        names.append(str(path))
    subprocess.run(
        ["git", "-C", str(repo), "hash-object", "-w", "--stdin-paths"],
        input="\n".join(names).encode(),
        check=True,
        capture_output=True,
    )
    before = _objects(repo)["count"]
    assert before > GC_AUTO_LOOSE
    (repo / "a.txt").write_text("a\n")
    env = {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
    }
    git_output(["add", "a.txt"], what="add", cwd=repo, env=env)
    git_output(["commit", "-q", "-m", "a"], what="commit", cwd=repo, env=env)
    time.sleep(1.5)  # a detached gc would have written its pack by now (the old code's did)
    after = _objects(repo)
    assert after["count"] >= before and after["packs"] == 0, after
    assert not (repo / ".git" / "gc.pid").exists()


def test_git_time_bounds_scale_with_the_work() -> None:
    assert scaled_timeout() == GIT_TIMEOUT_S
    gib = scaled_timeout(total_bytes=1 << 30, entries=200_000)
    assert gib > 4 * GIT_TIMEOUT_S  # a 1 GiB, 200k-entry tree gets far more than the fixed bound
    assert scaled_timeout(total_bytes=2 << 30) > scaled_timeout(total_bytes=1 << 30)


# ── busy unmount ───────────────────────────────────────────────────────────────────────────


def _tmpfs(target: Path) -> None:
    target.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(target)], check=True)


def test_a_busy_mount_is_retried_until_it_is_free(tmp_path) -> None:
    needs_root("mounts a tmpfs")
    target = tmp_path / "m"
    _tmpfs(target)
    holder = subprocess.Popen(["sleep", "30"], cwd=target)  # its cwd keeps the mount busy
    try:
        threading.Timer(0.3, holder.kill).start()  # ...for 0.3 s, then it is gone
        done = unmount(target, what="a test mount", retry_s=5.0)
    finally:
        holder.kill()
        holder.wait()
    assert done.problem is None and done.note is None, done
    assert not os.path.ismount(target)


def test_a_mount_busy_past_the_retries_is_detached_not_failed(tmp_path) -> None:
    needs_root("mounts a tmpfs")
    target = tmp_path / "m"
    _tmpfs(target)
    holder = subprocess.Popen(["sleep", "30"], cwd=target)
    try:
        done = unmount(target, what="a test mount", retry_s=0.2)
        assert done.problem is None and done.note is not None and "detached lazily" in done.note
        assert not os.path.ismount(target)
    finally:
        holder.kill()
        holder.wait()
    assert unmount(target, what="a test mount").problem is None  # not mounted: nothing to do


# ── size caps at bind time ─────────────────────────────────────────────────────────────────


def _tasks_for(repo: Path, root: Path) -> Path:
    (root / "oracles").mkdir(exist_ok=True)
    (root / "oracles" / "o.py").write_text("import unittest\n")
    entry = {
        "id": "too-big",
        "class": "scale",
        "repo": str(repo),
        "ref": "HEAD",
        "prompt": "p",
        "verify": "true",
        "oracle": {"command": "python3 x.py", "files": [{"source": "oracles/o.py", "target": "o.py"}]},
    }
    path = root / "tasks.yaml"
    path.write_text(yaml.safe_dump({"tasks": [entry]}))
    return path


@pytest.mark.parametrize("cap", ["entries", "bytes"])
def test_a_tree_over_the_task_caps_is_refused_at_bind_time_naming_task_and_cap(
    cap, many_files, tmp_path, monkeypatch
) -> None:
    repo, _ = many_files
    monkeypatch.setenv("WORKFLOW_BENCH_CACHE", str(tmp_path / "cache"))
    if cap == "entries":
        monkeypatch.setattr(taskspec, "MAX_TASK_ENTRIES", 1000)
        monkeypatch.setattr(repos, "MAX_TASK_ENTRIES", 1000)
    else:
        monkeypatch.setattr(taskspec, "MAX_TASK_BYTES", 10_000)
    path = _tasks_for(repo, tmp_path)
    with pytest.raises(TaskFileError) as caught:
        bind_tasks(load_task_file(path))
    (err,) = caught.value.errors
    assert (err.task_id, err.key) == ("too-big", "repo")
    assert ("1,000" if cap == "entries" else "10,000") in err.message and "cap" in err.message
    # Under the caps the same task binds, its size recorded for the template's time bounds.
    monkeypatch.undo()
    monkeypatch.setenv("WORKFLOW_BENCH_CACHE", str(tmp_path / "cache"))
    (binding,) = bind_tasks(load_task_file(path))
    assert binding.tree_entries is not None and binding.tree_entries > GC_AUTO_LOOSE
    assert binding.tree_bytes is not None and binding.tree_bytes > 0


# ── cheaper fixed costs, still correct ─────────────────────────────────────────────────────


def test_a_process_wait_ends_at_exit_timeout_or_cancel() -> None:
    assert run_process(["true"], timeout_s=10).ok
    slow = run_process(["sleep", "30"], timeout_s=0.3)
    assert slow.state == "timeout"
    cancel = threading.Event()
    threading.Timer(0.2, cancel.set).start()
    assert run_process(["sleep", "30"], timeout_s=30, cancel=cancel).state == "cancelled"


def test_remove_tree_takes_what_an_agent_could_leave(tmp_path) -> None:
    root = tmp_path / "victim"
    deep = root
    for _ in range(400):  # deeper than any recursion limit would like
        deep = deep / "d"
    deep.mkdir(parents=True)
    (deep / "f").write_text("x")
    locked = root / "locked"
    (locked / "inner").mkdir(parents=True)
    (locked / "inner" / "g").write_text("y")
    (locked / "inner").chmod(0)
    locked.chmod(0o500)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep").write_text("keep")
    (root / "link").symlink_to(outside)
    remove_tree(root)
    assert not root.exists() and (outside / "keep").read_text() == "keep"
    remove_tree(root)  # absent: nothing to do


def test_a_scan_reads_only_what_changed_and_misses_no_disguised_change(tmp_path) -> None:
    root = tmp_path / "ws"
    (root / "pkg").mkdir(parents=True)
    for index in range(50):
        (root / "pkg" / f"m{index}.py").write_text(f"value = {index}\n")
    time.sleep(0.15)  # out of the racy window: the first scan's keys are trusted
    first = scan_workspace(root)
    assert first.state.read == 50
    again = scan_workspace(root, previous=first.state)
    assert again.state.read == 0 and not again.changed
    # Same size, same mtime, same path: only the ctime says it was rewritten.
    target = root / "pkg" / "m7.py"
    st = os.stat(target)
    target.write_text("value = 8\n")
    os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert os.stat(target).st_size == st.st_size
    (root / "pkg" / "m3.py").unlink()
    (root / "new.py").write_text("x = 1\n")
    scan = scan_workspace(root, previous=again.state)
    assert scan.changed == {"pkg/m7.py", "pkg/m3.py", "new.py"}
    assert scan.state.read <= 3
    assert scan.state.entries["pkg/m7.py"] != first.state.entries["pkg/m7.py"]


def test_a_file_written_right_after_a_scan_is_read_again(tmp_path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    target = root / "a.py"
    target.write_text("a = 1\n")
    first = scan_workspace(root)  # written within the racy window: its key is never trusted
    target.write_text("a = 2\n")  # may land in the same timestamp tick
    scan = scan_workspace(root, previous=first.state)
    assert scan.changed == {"a.py"}


def test_a_cell_whose_volume_stays_busy_at_teardown_is_not_charged_to_its_arm(tmp_path) -> None:
    """The cell's teardown (``cells.run._release``) on a real cell volume held busy by a host
    process: the volume is retried, then detached lazily, the clone is removed, and nothing is a
    cleanup failure (charged) or an infra error; the teardown says what it did as a harness note."""
    needs_root("a cell's loop volume")
    from types import SimpleNamespace

    from workflow_bench.cells.run import _release
    from workflow_bench.sandbox import CellLimits, CellResources

    template = tmp_path / "template"
    template.mkdir()
    (template / "f.txt").write_text("x\n")
    cell_dir = tmp_path / "cell"
    resources = CellResources(CellLimits(memory_mib=256, pids=64, disk_mib=16), cell_dir)
    resources.open(clone_source=template)
    if not os.path.ismount(cell_dir):
        missing_tool("loop devices for a cell volume (/dev/loop-control)")
    (cell_dir / "workspace").mkdir()
    holder = subprocess.Popen(["sleep", "60"], cwd=cell_dir / "workspace")  # keeps the volume busy
    notes: list[str] = []
    try:
        breaches, enforced, cleanup, harness = _release(
            resources, cell_dir, SimpleNamespace(progress=notes.append)
        )
    finally:
        holder.kill()
        holder.wait()
    assert (breaches, cleanup, harness) == ([], None, None), (cleanup, harness)
    assert enforced is not None and enforced["disk_mib"] == 16
    assert any("detached lazily" in note for note in notes), notes
    assert not cell_dir.exists() or not os.path.ismount(cell_dir)
