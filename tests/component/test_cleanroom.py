"""``cells.cleanroom.judge_patch`` on the demo's grouping task, real bwrap and git: what it judges.

The reference patch passes; no patch, a patch that does not apply, a stand-in and a truncated
patch do not (the last three cannot be re-judged at all); a fix shipped only as bytecode is
removed before the oracle runs; test configuration in the patch is left at the base's for the
oracle but seen by verify; the room is gone afterwards.
"""

from __future__ import annotations

import threading
from dataclasses import replace
from pathlib import Path

import pytest

from workflow_bench.cells.cleanroom import (
    CleanRoom,
    UnjudgeablePatch,
    check_replayable,
    judge_patch,
    patch_churn,
    patch_paths,
    room_dir,
)
from workflow_bench.cells.context import prepare_task_context
from workflow_bench.process import ProcessError
from workflow_bench.sandbox import SandboxKind
from workflow_bench.taskspec.spec import bind_tasks, load_task_file
from workflow_bench.toolkit.manifest import load_toolkit
from workflow_bench.workspace.patch import MAX_PATCH_BYTES, stand_in

pytestmark = pytest.mark.component
ROOT = Path(__file__).resolve().parents[2]
DEMO_TASKS = ROOT / "tasks.scenarios.yaml"
GOLD = (ROOT / "workflow_bench/corpus/reference/trivial-amount-grouping.patch").read_bytes()
FIX_ONLY = GOLD.split(b"diff --git a/tests/")[0]


@pytest.fixture(scope="module")
def task(tmp_path_factory):
    binding = next(
        b for b in bind_tasks(load_task_file(DEMO_TASKS)) if b.spec.task_id == "trivial-amount-grouping"
    )
    dest = tmp_path_factory.mktemp("cleanroom") / "template"
    return prepare_task_context(binding, toolkit=load_toolkit("demo"), dest=dest)


@pytest.fixture
def room(bwrap_bin) -> CleanRoom:
    return CleanRoom(kind=SandboxKind.BWRAP, bwrap_bin=bwrap_bin, timeout_s=120, cancel=threading.Event())


def _added(path: str, data: bytes) -> bytes:
    lines = data.decode().splitlines()
    body = "".join(f"+{line}\n" for line in lines)
    return (
        f"diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n+++ b/{path}\n"
        f"@@ -0,0 +1,{len(lines)} @@\n{body}"
    ).encode()


def test_the_reference_patch_passes_and_no_patch_fails(task, room, tmp_path):
    passed = judge_patch(room, task, GOLD, where=tmp_path / "a", with_verify=True)
    assert passed.oracle.passed and passed.verify is not None and passed.verify.passed
    assert passed.bytecode_removed == () and passed.test_config_kept == ()
    assert "clean-room oracle passed" in passed.detail()
    empty = judge_patch(room, task, b"", where=tmp_path / "b")
    assert not empty.oracle.passed and empty.verify is None
    assert "clean-room oracle failed" in empty.detail()
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


def test_bytecode_in_the_patch_is_removed_before_the_oracle(task, room, tmp_path):
    pyc = "ledger/__pycache__/money.cpython-311.pyc"
    patch = FIX_ONLY + _added(pyc, b"not bytecode") + _added("ledger/old.pyo", b"x")
    verdict = judge_patch(room, task, patch, where=tmp_path / "r")
    assert verdict.oracle.passed  # the source fix is judged; the bytecode never ran
    assert sorted(verdict.bytecode_removed) == sorted([pyc, "ledger/old.pyo"])
    assert "bytecode removed: " in verdict.detail()


def test_test_configuration_is_kept_at_the_bases_for_the_oracle_but_verify_sees_it(task, room, tmp_path):
    # A conftest that would fail every run if anything imported it: unittest never does, so verify
    # passes either way; a sitecustomize the oracle's interpreter would import is kept out.
    breaking = b"raise SystemExit('planted')\n"
    patch = GOLD + _added("sitecustomize.py", breaking) + _added("tests/conftest.py", b"X = 1\n")
    verdict = judge_patch(room, task, patch, where=tmp_path / "r", with_verify=True)
    assert verdict.test_config_kept == ("sitecustomize.py", "tests/conftest.py")
    assert verdict.oracle.passed
    assert "test config kept at the base's: sitecustomize.py, tests/conftest.py" in verdict.detail()


@pytest.mark.parametrize(
    "patch, why",
    [
        (FIX_ONLY.replace(b"return int(whole)", b"return int(whole!)"), "does not apply"),
        (_added("big.bin", stand_in(9 << 20, "0" * 64)), "stand-in"),
        (FIX_ONLY + f"\n[truncated at {MAX_PATCH_BYTES} bytes]\n".encode(), "truncated"),
        (b"this is not a patch\n", "not a patch git can read"),
    ],
)
def test_a_patch_that_cannot_be_applied_byte_exactly_is_unjudgeable(task, room, tmp_path, patch, why):
    with pytest.raises(UnjudgeablePatch, match=why):
        judge_patch(room, task, patch, where=tmp_path / "r")
    assert not (tmp_path / "r").exists()


def test_patch_paths_and_churn_are_gits_reading(tmp_path):
    assert patch_paths(GOLD, tmp_path) == ("ledger/money.py", "tests/test_money.py")
    assert patch_churn(GOLD, tmp_path) == {"diff_files": 2, "diff_insertions": 12, "diff_deletions": 3}
    assert patch_paths(b"", tmp_path) == () and patch_churn(b"", tmp_path)["diff_files"] == 0
    odd = _added("a dir/[x]*.py", b"y\n")
    assert patch_paths(odd, tmp_path) == ("a dir/[x]*.py",)
    assert list(tmp_path.iterdir()) == []  # the spooled copy is gone


def test_replayable_and_room_dir():
    check_replayable(GOLD)
    check_replayable(b"")
    with pytest.raises(UnjudgeablePatch, match="truncated"):
        check_replayable(b"x" + f"\n[truncated at {MAX_PATCH_BYTES} bytes]\n".encode())
    assert room_dir(Path("/w/abc")) == Path("/w/abc.room")


def _with_setup(task, setup: str):
    spec = task.binding.spec.model_copy(update={"setup": setup})
    return replace(task, binding=replace(task.binding, spec=spec))


def test_the_tasks_setup_runs_in_the_room_before_the_patch(task, room, tmp_path):
    # The patch edits a file only setup makes: it applies only if setup ran first, in the room.
    made = _with_setup(task, "printf 'made\\n' > setup-made.txt")
    edit = b"diff --git a/setup-made.txt b/setup-made.txt\n--- a/setup-made.txt\n+++ b/setup-made.txt\n"
    edit += b"@@ -1 +1 @@\n-made\n+edited\n"
    verdict = judge_patch(room, made, GOLD + edit, where=tmp_path / "r")
    assert verdict.oracle.passed
    with pytest.raises(UnjudgeablePatch, match="does not apply") as caught:
        judge_patch(room, task, GOLD + edit, where=tmp_path / "s")
    assert "base: error: setup-made.txt: " in str(caught.value)  # git's own words, not its exit status
    with pytest.raises(ProcessError, match="task setup in the clean room"):
        judge_patch(room, _with_setup(task, "exit 3"), GOLD, where=tmp_path / "t")
    assert not any(tmp_path.iterdir())


def test_test_configuration_with_glob_characters_is_kept_exactly(task, room, tmp_path):
    odd = "conf[ab]*?/conftest.py"
    sibling = "confa/conftest.py"  # what the unescaped pattern would also match
    patch = GOLD + _added(odd, b"X = 1\n") + _added(sibling, b"Y = 1\n")
    verdict = judge_patch(room, task, patch, where=tmp_path / "r")
    assert verdict.test_config_kept == (odd, sibling) or verdict.test_config_kept == tuple(
        sorted((odd, sibling))
    )
    assert verdict.oracle.passed


def test_the_detail_lists_at_most_ten_of_each_and_is_bounded(task, room, tmp_path):
    many = b"".join(_added(f"pkg{i:02d}/m.pyc", b"x") for i in range(12))
    verdict = judge_patch(room, task, GOLD + many, where=tmp_path / "r")
    assert len(verdict.bytecode_removed) == 12
    shown = verdict.detail().split("bytecode removed: ")[1].split("; ")[0]
    assert shown == ", ".join(verdict.bytecode_removed[:10])
    long = replace(verdict, test_config_kept=tuple(f"{'d' * 300}{i}/conftest.py" for i in range(11)))
    assert len(long.detail()) == 2000
    assert long.detail().count("conftest.py") <= 10


def test_the_detail_shows_ten_test_config_paths_at_most():
    from workflow_bench.cells.cleanroom import RoomVerdict
    from workflow_bench.judging.outcome_report import JudgeOutcome

    kept = tuple(f"p{i:02d}/conftest.py" for i in range(11))
    verdict = RoomVerdict(JudgeOutcome(False, "d", ""), None, (), kept)
    assert (
        verdict.detail()
        == f"clean-room oracle failed: d; test config kept at the base's: {', '.join(kept[:10])}"
    )


def test_patch_paths_keep_a_tab_or_a_leading_space_and_run_in_the_scratch_directory(tmp_path, monkeypatch):
    """git's -z record is 'added<TAB>deleted<TAB>path': the path is everything after the second tab;
    git runs in ``scratch`` (a caller whose working directory is gone still reads a patch); an
    unreadable patch is named as git's reading of it."""
    tabbed = (
        b'diff --git "a/a\\tb.py" "b/a\\tb.py"\nnew file mode 100644\n--- /dev/null\n'
        b'+++ "b/a\\tb.py"\n@@ -0,0 +1 @@\n+x\n'
    )
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    gone = tmp_path / "gone"
    gone.mkdir()
    monkeypatch.chdir(gone)
    gone.rmdir()
    assert patch_paths(tabbed + _added(" lead.py", b"y\n"), scratch) == ("a\tb.py", " lead.py")
    assert patch_churn(GOLD, scratch)["diff_files"] == 2
    with pytest.raises(UnjudgeablePatch) as caught:
        patch_paths(b"this is not a patch\n", scratch)
    assert str(caught.value).startswith("the saved patch is not a patch git can read: read the saved patch: ")


def test_a_test_config_path_is_escaped_for_gits_include(tmp_path):
    """--include takes a glob: each of * ? [ ] \\ is escaped, so git applies (and reverts) exactly
    the path, never a sibling the pattern would also match."""
    import subprocess

    from workflow_bench.cells.cleanroom import _glob_escaped

    assert _glob_escaped("a*b?c[d]e\\f.py") == "a\\*b\\?c\\[d\\]e\\\\f.py"
    assert _glob_escaped("Xplain/conftest.py") == "Xplain/conftest.py"
    odd, sibling = "conf[ab]*/conftest.py", "confa/conftest.py"
    (tmp_path / "p.diff").write_bytes(_added(odd, b"X = 1\n") + _added(sibling, b"Y = 1\n"))
    listed = subprocess.run(
        ["git", "apply", "--numstat", f"--include={_glob_escaped(odd)}", "p.diff"],
        cwd=tmp_path, capture_output=True, check=True,
    ).stdout  # fmt: skip
    assert listed == f"1\t0\t{odd}\n".encode()


def _rewrite(task, path: str, edit) -> bytes:
    """A whole-file hunk replacing the base's ``path`` by ``edit(text)``."""
    old = (task.template / path).read_text().splitlines()
    new = edit("\n".join(old) + "\n").splitlines()
    body = "".join(f"-{line}\n" for line in old) + "".join(f"+{line}\n" for line in new)
    return (
        f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n@@ -1,{len(old)} +1,{len(new)} @@\n{body}"
    ).encode()


def test_the_rooms_setup_bound_is_a_cells():
    from workflow_bench.cells import cleanroom, run

    assert cleanroom.SETUP_TIMEOUT_S == run.SETUP_TIMEOUT_S


def test_a_bytecode_name_that_is_not_utf8_is_reported_replaced_and_git_internals_are_not(
    task, room, tmp_path
):
    """find prints raw name bytes: a name git unquoted to a non-UTF-8 byte is shown with U+FFFD;
    bytecode setup left under .git/ is removed but is not the patch's and is not listed."""
    raw = (
        b'diff --git "a/\\377x.pyc" "b/\\377x.pyc"\nnew file mode 100644\n--- /dev/null\n'
        b'+++ "b/\\377x.pyc"\n@@ -0,0 +1 @@\n+x\n'
    )
    made = _with_setup(task, "touch .git/planted.pyc")
    verdict = judge_patch(room, made, GOLD + raw, where=tmp_path / "r")
    assert verdict.bytecode_removed == ("\ufffdx.pyc",)
    assert verdict.oracle.passed


def _fixed(task, tmp_path: Path, path: str) -> str:
    """``path`` as the reference fix leaves it (git apply on a copy of the base's file)."""
    import subprocess

    (tmp_path / "fix" / path).parent.mkdir(parents=True)
    (tmp_path / "fix" / path).write_bytes((task.template / path).read_bytes())
    (tmp_path / "fix.diff").write_bytes(FIX_ONLY)
    subprocess.run(["git", "apply", str(tmp_path / "fix.diff")], cwd=tmp_path / "fix", check=True)
    return (tmp_path / "fix" / path).read_text()


def test_verify_and_the_oracle_are_held_to_the_lock_entrys_tests(task, room, tmp_path):
    """Not only the counts: a recorded verify test renamed away fails verify (seven tests still
    pass); a recorded oracle test the agent's code skips fails the oracle (the others pass)."""
    renamed = FIX_ONLY + _rewrite(
        task, "tests/test_money.py", lambda t: t.replace("def test_negative(", "def test_neg(")
    )
    verdict = judge_patch(room, task, renamed, where=tmp_path / "v", with_verify=True)
    assert verdict.oracle.passed and verdict.verify is not None and not verdict.verify.passed
    skipping = (
        "\n_format = format_amount\n\n\n"
        "def format_amount(cents, *, grouping=False):\n"
        "    if grouping and cents < 0:\n"
        "        import unittest\n\n"
        "        raise unittest.SkipTest('agent skip')\n"
        "    return _format(cents, grouping=grouping)\n"
    )
    fixed = _fixed(task, tmp_path, "ledger/money.py")
    verdict = judge_patch(
        room, task, _rewrite(task, "ledger/money.py", lambda t: fixed + skipping), where=tmp_path / "o"
    )
    assert not verdict.oracle.passed


def test_a_cancelled_sweep_stops_each_step_of_the_room(task, bwrap_bin, tmp_path):
    """The sweep's cancel event reaches every sandbox run: set beforehand, the first step the
    room would run is the one that stops (setup, else the apply, else the bytecode removal)."""
    cancel = threading.Event()
    cancel.set()
    room = CleanRoom(kind=SandboxKind.BWRAP, bwrap_bin=bwrap_bin, timeout_s=120, cancel=cancel)
    with pytest.raises(ProcessError, match=r"^task setup in the clean room: cancelled"):
        judge_patch(room, _with_setup(task, "true"), GOLD, where=tmp_path / "s")
    with pytest.raises(
        UnjudgeablePatch, match=r"^the saved patch does not apply to a fresh clone of the base: "
    ):
        judge_patch(room, task, GOLD, where=tmp_path / "a")
    with pytest.raises(ProcessError, match=r"^remove bytecode in the clean room: cancelled"):
        judge_patch(room, task, b"", where=tmp_path / "b")
    assert not any(tmp_path.iterdir())


def test_the_room_is_the_workspace_under_where(task, room, tmp_path):
    """The sandbox's working tree is ``where/workspace`` (its mount's source, as the kernel shows it)."""
    probe = _with_setup(task, "grep -o ' [^ ]*/r/[^ ]* /workspace ' /proc/self/mountinfo >&2; exit 3")
    with pytest.raises(ProcessError) as caught:
        judge_patch(room, probe, b"", where=tmp_path / "r")
    assert str(caught.value).endswith("/r/workspace /workspace")


def _renamed(task, src: str, dst: str, text: str, *, old: list[str] | None = None) -> bytes:
    old = (task.template / src).read_text().splitlines() if old is None else old
    new = text.splitlines()
    body = "".join(f"-{line}\n" for line in old) + "".join(f"+{line}\n" for line in new)
    return (
        f"diff --git a/{src} b/{dst}\nsimilarity index 0%\nrename from {src}\nrename to {dst}\n"
        f"--- a/{src}\n+++ b/{dst}\n@@ -1,{len(old)} +1,{len(new)} @@\n{body}"
    ).encode()


def test_a_rename_into_or_out_of_test_configuration_is_put_back_whole(task, room, tmp_path):
    """A real bug, fixed: the reversal's --include matches a reversed file patch's new path (the
    patch's old one), so a rename into tests/conftest.py was not reverted at all (the oracle ran
    beside the agent's conftest while the detail said it was kept at the base's), and a rename out
    of one was not even seen. The agent's code below fails the oracle unless the base's is back."""
    fixed = _fixed(task, tmp_path, "ledger/money.py")

    def checking(present: bool) -> bytes:
        test = "not os.path.exists" if present else "os.path.exists"
        check = f"\nimport os\n\nif {test}('tests/conftest.py'):\n    raise SystemExit('config moved')\n"
        return _rewrite(task, "ledger/money.py", lambda t: fixed + check)

    into = checking(False) + _renamed(task, "README.md", "tests/conftest.py", "X = 1\n")
    verdict = judge_patch(room, task, into, where=tmp_path / "i")
    assert verdict.test_config_kept == ("tests/conftest.py",) and verdict.oracle.passed
    made = _with_setup(task, "printf 'BASE = 1\\n' > tests/conftest.py")
    out = checking(True) + _renamed(made, "tests/conftest.py", "tests/helper.py", "Y = 1\n", old=["BASE = 1"])
    verdict = judge_patch(room, made, out, where=tmp_path / "o")
    assert verdict.test_config_kept == ("tests/conftest.py",) and verdict.oracle.passed


def test_file_names_pair_each_file_patchs_old_and_new_path(tmp_path):
    from workflow_bench.cells.cleanroom import file_names

    patch = (
        b"diff --git a/a.txt b/conftest.py\nsimilarity index 100%\nrename from a.txt\nrename to conftest.py\n"
        + _added("n.py", b"x\n")
        + b"diff --git a/b.txt b/b.txt\ndeleted file mode 100644\n"
        + b"--- a/b.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-b\n"
    )
    assert file_names(patch, tmp_path) == (("a.txt", "conftest.py"), ("n.py", "n.py"), ("b.txt", "b.txt"))
    # what a regraded row counts as changed (is it work?): a rename removes its old name too
    assert patch_paths(patch, tmp_path) == ("a.txt", "conftest.py", "n.py", "b.txt")
    assert file_names(b"", tmp_path) == ()


def test_bytecode_that_cannot_be_removed_stops_the_room(task, room, tmp_path):
    locked = _with_setup(task, "mkdir locked && touch locked/x.pyc && chmod 555 locked")
    with pytest.raises(ProcessError) as caught:
        judge_patch(room, locked, b"", where=tmp_path / "r")
    assert str(caught.value).startswith("remove bytecode in the clean room: exit 1: find: ")
    assert "locked/x.pyc" in str(caught.value)


def test_git_applys_words_are_cut_to_1500_characters(task, room, tmp_path):
    missing = b"".join(
        f"diff --git a/f{i:04d}.txt b/f{i:04d}.txt\n--- a/f{i:04d}.txt\n+++ b/f{i:04d}.txt\n"
        f"@@ -1 +1 @@\n-a\n+b\n".encode()
        for i in range(150)
    )
    what = "the saved patch does not apply to a fresh clone of the base"
    with pytest.raises(UnjudgeablePatch) as caught:
        judge_patch(room, task, missing, where=tmp_path / "r")
    assert str(caught.value).startswith(f"{what}: ") and len(str(caught.value)) == len(what) + 2 + 1500
    assert "No such file or directory" in str(caught.value)  # git's words (its stderr's 4000-byte tail)


def test_test_configuration_that_cannot_be_put_back_is_unjudgeable(task, room, tmp_path):
    """A copy into a test-config path does not reverse (git would re-create the copy's source):
    the room says so rather than judge the agent's configuration (the harness's own diffs never
    hold copies; a regraded prediction may)."""
    copy = b"diff --git a/README.md b/tests/conftest.py\nsimilarity index 100%\n"
    copy += b"copy from README.md\ncopy to tests/conftest.py\n"
    with pytest.raises(UnjudgeablePatch) as caught:
        judge_patch(room, task, copy, where=tmp_path / "r")
    assert str(caught.value) == (
        "the test configuration could not be put back in the clean room: "
        "error: README.md: already exists in working directory"
    )


def _cancel_when(cancel: threading.Event, seen) -> threading.Thread:
    """Set ``cancel`` once ``seen()`` holds (polled every millisecond, for at most a minute)."""

    def watch() -> None:
        for _ in range(60_000):
            if seen():
                break
            threading.Event().wait(0.001)
        cancel.set()

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread


def test_a_sweep_cancelled_during_the_room_stops_verify_and_the_oracle(task, bwrap_bin, tmp_path):
    """Set once the patch is applied, the cancel event stops the authored verify (a sleeping one
    here); set once the bytecode is gone, it stops the oracle (the agent's module sleeps 3 s)."""
    cancel = threading.Event()
    room = CleanRoom(kind=SandboxKind.BWRAP, bwrap_bin=bwrap_bin, timeout_s=120, cancel=cancel)
    slow = replace(
        task, binding=replace(task.binding, spec=task.binding.spec.model_copy(update={"verify": "sleep 5"}))
    )
    money = tmp_path / "v" / "workspace" / "ledger" / "money.py"
    watcher = _cancel_when(cancel, lambda: money.is_file() and b"grouping: bool" in money.read_bytes())
    with pytest.raises(ProcessError, match=r"^judge runner: cancelled"):
        judge_patch(room, slow, FIX_ONLY, where=tmp_path / "v", with_verify=True)
    watcher.join()
    cancel.clear()
    fixed = _fixed(task, tmp_path, "ledger/money.py")
    sleepy = _rewrite(task, "ledger/money.py", lambda t: fixed + "\nimport time\n\ntime.sleep(3)\n")
    pyc = tmp_path / "o" / "workspace" / "gone.pyc"
    appeared = threading.Event()

    def removed() -> bool:
        if pyc.exists():
            appeared.set()
        return appeared.is_set() and not pyc.exists()

    watcher = _cancel_when(cancel, removed)
    with pytest.raises(ProcessError, match=r"^judge runner: cancelled"):
        judge_patch(room, task, sleepy + _added("gone.pyc", b"x"), where=tmp_path / "o")
    watcher.join()


def test_a_rooms_cell_bounds_are_a_cells_uid_and_limits(task, bwrap_bin, tmp_path):
    """With the cell's kernel bounds (a root runner's sweep), every step runs as the cell's own uid,
    in a room that uid owns: setup writes there as non-root, and the patch applies."""
    from tests.conftest import needs_root
    from workflow_bench.sandbox import CellLimits, CellResources

    needs_root("a cell uid and its bounds")
    resources = CellResources(CellLimits(memory_mib=512, pids=64, disk_mib=64), tmp_path / "cell")
    resources.open(clone_source=task.template)
    try:
        room = CleanRoom(
            kind=SandboxKind.BWRAP,
            bwrap_bin=bwrap_bin,
            timeout_s=120,
            cancel=threading.Event(),
            resources=resources,
        )
        probe = _with_setup(task, 'test "$(id -u)" != 0 && touch made')
        verdict = judge_patch(room, probe, GOLD, where=tmp_path / "cell.room")
        assert verdict.oracle.passed
    finally:
        assert resources.close() is None


def test_the_oracle_is_held_to_the_lock_entrys_tests_not_a_count(task, room, tmp_path):
    """A lock entry naming a test the oracle does not run fails the reference patch (six tests
    passing would satisfy a count)."""
    expected = task.binding.expected_tests
    assert expected is not None and expected.oracle is not None
    more = replace(
        expected.oracle, passed=(*expected.oracle.passed, "wfbench_target_0.GroupingOracle.test_gone")
    )
    locked = replace(task, binding=replace(task.binding, expected_tests=replace(expected, oracle=more)))
    verdict = judge_patch(room, locked, GOLD, where=tmp_path / "r")
    assert not verdict.oracle.passed and "test_gone" in verdict.oracle.detail


def test_whitespace_errors_are_not_warned_about(task, room, tmp_path):
    """git apply's own words for a patch that does not apply, without its whitespace warnings."""
    patch = _added("ws.txt", b"x \n") + (
        b"diff --git a/f.txt b/f.txt\n--- a/f.txt\n+++ b/f.txt\n@@ -1 +1 @@\n-a\n+b\n"
    )
    with pytest.raises(UnjudgeablePatch) as caught:
        judge_patch(room, task, patch, where=tmp_path / "r")
    assert str(caught.value) == (
        "the saved patch does not apply to a fresh clone of the base: error: f.txt: No such file or directory"
    )
