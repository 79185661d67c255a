"""Clean-room judging: the hidden oracle on a fresh clone of the base with exactly the saved patch.

``judge_patch`` is the one entry, used by a cell after its own judges (``cells.judges``) and by
every regrade (``workflow_bench.regrade``). It builds the room from nothing the agent touched:

1. a fresh copy of the task's sealed template (the bytes of the base commit, the seeded skills and
   the task's assets; never the cell's clone), the task's setup re-run there in the sandbox;
2. ``patch.diff`` exactly as saved, applied by ``git apply`` inside the sandbox. A patch that
   holds a stand-in for a file over the patch view's caps or was truncated at
   ``MAX_PATCH_BYTES`` cannot be applied byte-exactly: ``UnjudgeablePatch`` (charged to the arm
   as ``workspace-invalid``), never a stand-in judged as if it were the file; a patch that does not
   apply is the same;
3. the test configuration the patch touches (``judging.test_config``; either name of a rename)
   is left at the base's, as the cell's own restore does for its workspace, and every
   ``.pyc``/``.pyo`` (and link so named) is removed: bytecode is never judged, the source the
   patch holds is (a fix shipped only as bytecode whose header matches the untouched source's
   mtime and size fails here);
4. the hidden oracle (``judging.judge.run_hidden_oracle``: its staging, sentinels, guard) and,
   when asked (regrade), the authored verify, each in a sandbox over the room.

Whatever the patch cannot carry (ignored-by-git paths are carried; ``.git``-named paths, special
files, empty directories, bytecode, leftover processes and caches are not) cannot reach the
oracle here. The room lives beside the cell directory (never on the cell's volume: harness work)
and is removed before ``judge_patch`` returns.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from pathlib import Path

from workflow_bench.judging.judge import oracle_expectation, run_hidden_oracle, run_verify, verify_expectation
from workflow_bench.judging.outcome_report import JudgeOutcome
from workflow_bench.judging.test_config import is_test_config
from workflow_bench.process import ProcessError
from workflow_bench.sandbox import CellResources, Mount, RunPolicy, SandboxKind, create_sandbox
from workflow_bench.taskspec.mounts import task_mounts
from workflow_bench.workspace.clone import copy_clone
from workflow_bench.workspace.git import git_argv, run_git
from workflow_bench.workspace.patch import MAX_PATCH_BYTES, STAND_IN, parse_numstat
from workflow_bench.workspace.remove import remove_tree
from workflow_bench.workspace.snapshot import WorkspaceLimitError

from .context import TaskContext

ROOM_SUFFIX = ".room"
PATCH_TARGET = "/.wfbench-patch"
SETUP_TIMEOUT_S = 600  # as a cell's setup
APPLY_TIMEOUT_S = 300
TRUNCATED = f"\n[truncated at {MAX_PATCH_BYTES} bytes]\n".encode()
# Bytecode (and links so named) anywhere in the room: removed, never judged. find does not follow
# links; -delete removes the entry itself.
_DROP_BYTECODE = "find . \\( -name '*.pyc' -o -name '*.pyo' \\) \\( -type f -o -type l \\) -print -delete"


class UnjudgeablePatch(WorkspaceLimitError):
    """The saved patch cannot be applied byte-exactly to a fresh clone: charged to the arm."""


@dataclass(frozen=True, slots=True)
class CleanRoom:
    """What a clean room runs on: the sweep's sandbox backend and the judges' bounds."""

    kind: SandboxKind
    bwrap_bin: str
    timeout_s: float
    cancel: threading.Event
    resources: CellResources | None = None
    """The cell's kernel bounds at sweep time (the oracle runs the agent's code); None in a regrade."""


@dataclass(frozen=True, slots=True)
class RoomVerdict:
    oracle: JudgeOutcome
    verify: JudgeOutcome | None
    bytecode_removed: tuple[str, ...]
    test_config_kept: tuple[str, ...]
    """Test-configuration paths the patch touches, left at the base's for the oracle."""

    def detail(self) -> str:
        verdict = "passed" if self.oracle.passed else "failed"
        parts = [f"clean-room oracle {verdict}: {self.oracle.detail}"]
        if self.bytecode_removed:
            parts.append(f"bytecode removed: {', '.join(self.bytecode_removed[:10])}")
        if self.test_config_kept:
            parts.append(f"test config kept at the base's: {', '.join(self.test_config_kept[:10])}")
        return "; ".join(parts)[:2000]


def room_dir(cell_dir: Path) -> Path:
    """Where a cell's clean room lives: beside the cell directory, off the cell's volume."""
    return cell_dir.with_name(cell_dir.name + ROOM_SUFFIX)


def check_replayable(patch: bytes) -> None:
    """``UnjudgeablePatch`` when the saved patch is not the change byte for byte."""
    if patch.endswith(TRUNCATED):
        raise UnjudgeablePatch(
            f"the saved patch was truncated at {MAX_PATCH_BYTES} bytes: it cannot be re-judged"
        )
    if STAND_IN in patch:
        raise UnjudgeablePatch(
            "the saved patch holds a stand-in for a file over the patch view's caps: it cannot be re-judged"
        )


def patch_paths(patch: bytes, scratch: Path) -> tuple[str, ...]:
    """Every path the patch writes or removes, as git reads it (``file_names``): a rename's old
    name and its new one, each path once, in the patch's order."""
    return tuple(dict.fromkeys(path for names in file_names(patch, scratch) for path in names))


def _records(stdout: bytes) -> list[tuple[bytes, str]]:
    """``-z`` numstat records as (``added<TAB>deleted``, path)."""
    fields = [record.split(b"\t", 2) for record in stdout.split(b"\0") if record.count(b"\t") >= 2]
    return [(b"\t".join(f[:2]), os.fsdecode(f[2])) for f in fields]


def file_names(patch: bytes, scratch: Path) -> tuple[tuple[str, str], ...]:
    """Each file patch's (old, new) path. git's numstat names one path per file patch: the new one
    (the old for a deletion); of the reversed patch, which git lists in reverse order, the old one
    (the new for an addition). A rename's two names differ; git's counts, swapped, pair them."""
    forward = _records(_numstat(patch, scratch, "-z"))
    backward = _records(_numstat(patch, scratch, "-z", "-R"))[::-1]
    swapped = [b"\t".join(counts.split(b"\t")[::-1]) for counts, _ in backward]
    if [counts for counts, _ in forward] != swapped:
        raise UnjudgeablePatch("the saved patch's reversal does not match it file for file")
    return tuple((old, new) for (_, old), (_, new) in zip(backward, forward, strict=True))


def patch_churn(patch: bytes, scratch: Path) -> dict[str, int]:
    """The churn of a patch (files, insertions, deletions), as a cell's row counts it."""
    return parse_numstat(_numstat(patch, scratch).decode("utf-8", "replace"))


def _numstat(patch: bytes, scratch: Path, *options: str) -> bytes:
    if not patch:
        return b""
    path = scratch / "numstat.diff"
    path.write_bytes(patch)
    try:
        result = run_git(
            ["apply", "--numstat", *options, str(path)], what="read the saved patch", cwd=scratch
        )
    except ProcessError as exc:
        raise UnjudgeablePatch(f"the saved patch is not a patch git can read: {exc}"[:2000]) from exc
    finally:
        path.unlink(missing_ok=True)
    return result.stdout


def _glob_escaped(path: str) -> str:
    return "".join(f"\\{c}" if c in "*?[]\\" else c for c in path)


def judge_patch(
    room: CleanRoom,
    task: TaskContext,
    patch: bytes,
    *,
    where: Path,
    scratch: Path | None = None,
    with_verify: bool = False,
) -> RoomVerdict:
    """Judge ``patch`` in a clean room at ``where`` (created here, removed before returning).

    ``scratch``: where the judges stage the oracle and their reports (a cell's own directory, so
    its uid can read them); ``where`` itself by default.

    Raises ``UnjudgeablePatch`` (the patch cannot be re-judged: charged), ``ChargedFailure`` (a
    judge timed out), ``ProcessError`` (the sandbox could not run a step).
    """
    check_replayable(patch)
    where.mkdir()
    try:
        return _judge_in(room, task, patch, where=where, scratch=scratch or where, with_verify=with_verify)
    finally:
        remove_tree(where)


def _judge_in(
    room: CleanRoom, task: TaskContext, patch: bytes, *, where: Path, scratch: Path, with_verify: bool
) -> RoomVerdict:
    binding, spec = task.binding, task.binding.spec
    state = task.sealed().state
    workspace = where / "workspace"
    copy_clone(task.template, workspace, total_bytes=state.total_bytes, entries=len(state.entries))
    if room.kind is SandboxKind.BWRAP and room.resources is not None:
        room.resources.own(
            workspace
        )  # a root runner's cell uid writes the room, as it wrote the cell's clone
    sandbox = create_sandbox(
        room.kind,
        workspace=workspace,
        claude_bin=None,
        bwrap_bin=room.bwrap_bin,
        base_mounts=task_mounts(binding),
        resources=room.resources,
    )
    if spec.setup:
        result = sandbox.run(
            ["/bin/sh", "-c", spec.setup],
            policy=RunPolicy(workspace_writable=True),
            timeout_s=SETUP_TIMEOUT_S,
            cancel=room.cancel,
        )
        if not result.ok:
            raise ProcessError("task setup in the clean room", result)
    patch_dir = where / "patch"
    patch_dir.mkdir()
    names = file_names(patch, patch_dir)
    config = tuple(sorted({p for pair in names for p in pair if is_test_config(p)}))
    # The reversal's --include matches each reversed file patch's new path, the patch's old one:
    # a rename into (or out of) a test-config path is put back whole.
    revert = tuple(old for old, new in names if is_test_config(old) or is_test_config(new))
    (patch_dir / "patch.diff").write_bytes(patch)
    mounts = (Mount(source=patch_dir, target=PATCH_TARGET),)

    def apply(*options: str, what: str) -> None:
        result = sandbox.run(
            git_argv("apply", "--binary", "--whitespace=nowarn", *options, f"{PATCH_TARGET}/patch.diff"),
            policy=RunPolicy(workspace_writable=True, mounts=mounts),
            timeout_s=APPLY_TIMEOUT_S,
            cancel=room.cancel,
        )
        if not result.ok:
            detail = result.stderr_tail.strip()[:1500]
            raise UnjudgeablePatch(f"{what}: {detail or f'git apply exited {result.returncode}'}")

    expectation = binding.expected_tests
    verify = None
    if names:
        apply(what="the saved patch does not apply to a fresh clone of the base")
    if with_verify:
        # The authored verify judges what the patch left, its test configuration included.
        verify = run_verify(
            sandbox,
            spec.verify,
            scratch=scratch,
            expectation=verify_expectation(spec, expectation),
            timeout_s=room.timeout_s,
            cancel=room.cancel,
        )
    if revert:
        includes = [f"--include={_glob_escaped(p)}" for p in revert]
        apply("-R", *includes, what="the test configuration could not be put back in the clean room")
    dropped = sandbox.run(
        ["/bin/sh", "-c", _DROP_BYTECODE],
        policy=RunPolicy(workspace_writable=True),
        timeout_s=APPLY_TIMEOUT_S,
        cancel=room.cancel,
    )
    if not dropped.ok:
        raise ProcessError("remove bytecode in the clean room", dropped)
    removed = tuple(
        line.removeprefix("./")
        for line in dropped.stdout.decode("utf-8", "replace").splitlines()
        if line and not line.startswith("./.git/")
    )
    oracle = run_hidden_oracle(
        sandbox,
        binding.oracle,
        expectation=oracle_expectation(spec, expectation),
        scratch=scratch,
        timeout_s=room.timeout_s,
        cancel=room.cancel,
    )
    return RoomVerdict(oracle=oracle, verify=verify, bytecode_removed=removed, test_config_kept=config)
