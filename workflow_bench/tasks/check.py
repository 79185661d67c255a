"""Task self-check: can each task tell a fix from no fix, before anyone pays for a sweep?

``check_tasks`` judges every task in the real sandbox, with the same judge functions a cell
uses (``judging.judge.run_verify`` / ``run_hidden_oracle``; no second oracle runner), on fresh
clones of the same sanitized template a cell gets:

- **implementation tasks** — on the untouched base (after ``setup``) the hidden oracle must
  fail, and so must ``verify`` unless the task declares ``base_expected: {verify: pass}``
  (authored tests that do not cover the defect yet). With the task's ``reference_patch``
  applied, verify and the oracle must both pass, on each of ``repeats`` fresh clones
  (deterministic). A task without a reference patch is reported as not proven.
- **review tasks** (the oracle stages ``review-labels.json``) — there is no fix to apply: the
  reviewer is judged on its artifact against the labels. The check is that ``setup`` applies
  the change under review, the labels parse under the artifact contract's field rules, and a
  ``review-defect`` case has at least one label while a ``review-clean`` control has none.

A task that fails any of these "cannot discriminate": ``main`` prints one table line per task
and exits 1 naming them. The reference patch is read here (bounded, no symlinks) and by the
oracle agent, never by a normal cell.

Callers: ``python -m workflow_bench.tasks check``, ``runner --check-tasks``.
"""

from __future__ import annotations

import hashlib
import secrets
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from workflow_bench.cells.context import TaskContext, prepare_task_context
from workflow_bench.judging.attribution import ChargedFailure
from workflow_bench.judging.judge import run_hidden_oracle, run_verify
from workflow_bench.process import ProcessError
from workflow_bench.review.contract import REVIEW_LABELS_TARGET
from workflow_bench.review.labels import ReviewLabelsError, labels_from_oracle
from workflow_bench.sandbox import SANDBOX_WORKSPACE, Mount, RunPolicy, SandboxKind, create_sandbox
from workflow_bench.taskspec.oracles import read_beneath
from workflow_bench.taskspec.schema import MAX_REFERENCE_PATCH_BYTES
from workflow_bench.taskspec.spec import TaskBinding
from workflow_bench.toolkit.spec import Toolkit
from workflow_bench.workspace.clone import copy_clone, remove_tree
from workflow_bench.workspace.git import git_argv
from workflow_bench.workspace.paths import make_cell_dir

DEFAULT_REPEATS = 3  # the brief's determinism bar: three fresh clones, identical verdicts
SETUP_TIMEOUT_S = 600  # keep in sync with cells.run.SETUP_TIMEOUT_S
PATCH_TIMEOUT_S = 120


@dataclass(frozen=True, slots=True)
class Probe:
    """One judged clone: verify and oracle verdicts (``None`` = not run), or why it broke."""

    verify_passed: bool | None
    oracle_passed: bool | None
    error: str | None = None


@dataclass(frozen=True, slots=True)
class TaskCheck:
    """The self-check of one task; ``problems`` empty means it discriminates."""

    task_id: str
    kind: str  # "implementation" | "review"
    base: Probe | None
    reference: tuple[Probe, ...]
    reference_digest: str | None
    problems: tuple[str, ...]
    detail: str = ""

    @property
    def discriminates(self) -> bool:
        return not self.problems


@dataclass(frozen=True, slots=True)
class CheckSettings:
    toolkit: Toolkit
    bwrap_bin: str
    work_root: Path
    sandbox_kind: SandboxKind = SandboxKind.BWRAP
    timeout_s: float = 600
    repeats: int = DEFAULT_REPEATS
    cancel: threading.Event | None = None


def reference_patch_bytes(binding: TaskBinding) -> bytes | None:
    """The task's reference patch, read beneath its task file's directory (``None`` if none)."""
    spec = binding.spec
    if spec.reference_patch is None:
        return None
    return read_beneath(spec.task_dir, spec.reference_patch, max_bytes=MAX_REFERENCE_PATCH_BYTES)


def is_review_task(binding: TaskBinding) -> bool:
    return any(f.target == REVIEW_LABELS_TARGET for f in binding.oracle.files)


def check_tasks(
    bindings: Sequence[TaskBinding], settings: CheckSettings, *, progress: Callable[[str], None] = print
) -> list[TaskCheck]:
    results = []
    for binding in bindings:
        progress(f"[check] {binding.spec.task_id}")
        context = prepare_task_context(
            binding, toolkit=settings.toolkit, dest=settings.work_root / "templates" / binding.spec.task_id
        )
        if is_review_task(binding):
            results.append(_check_review(context, settings))
        else:
            results.append(_check_implementation(context, settings))
    return results


def _check_implementation(context: TaskContext, settings: CheckSettings) -> TaskCheck:
    spec = context.binding.spec
    problems: list[str] = []
    base = _probe(context, settings, patch=None)
    if base.error:
        problems.append(f"base: {base.error}")
    else:
        if base.oracle_passed:
            problems.append("the hidden oracle passes on the untouched base")
        if base.verify_passed != spec.base_verify_passes:
            expected = "pass" if spec.base_verify_passes else "fail"
            problems.append(
                f"verify {'passes' if base.verify_passed else 'fails'} on the untouched base "
                f"(declared base_expected: {{verify: {expected}}})"
            )
    patch = reference_patch_bytes(context.binding)
    reference: list[Probe] = []
    if patch is None:
        problems.append("no reference_patch: nothing shows verify and the oracle can pass")
    else:
        for _ in range(settings.repeats):
            probe = _probe(context, settings, patch=patch)
            reference.append(probe)
            if probe.error:
                problems.append(f"reference: {probe.error}")
                break
        verdicts = {(p.verify_passed, p.oracle_passed) for p in reference}
        if not any(p.error for p in reference) and verdicts != {(True, True)}:
            problems.append(f"with the reference patch over {len(reference)} clones: " + _show(reference))
    return TaskCheck(
        task_id=spec.task_id,
        kind="implementation",
        base=base,
        reference=tuple(reference),
        reference_digest=hashlib.sha256(patch).hexdigest() if patch is not None else None,
        problems=tuple(problems),
        detail=f"reference sha256 {hashlib.sha256(patch).hexdigest()[:12]}" if patch is not None else "",
    )


def _check_review(context: TaskContext, settings: CheckSettings) -> TaskCheck:
    spec = context.binding.spec
    problems: list[str] = []
    try:
        labels = labels_from_oracle(context.binding.oracle.files)
    except ReviewLabelsError as exc:
        labels = None
        problems.append(f"labels: {exc}")
    if labels is not None:
        if spec.task_class == "review-defect" and not labels:
            problems.append("a review-defect case has no labels: every review would pass it")
        if spec.task_class == "review-clean" and labels:
            problems.append(f"a review-clean control has {len(labels)} label(s)")
    base = _probe(context, settings, patch=None, judge=False)
    if base.error:
        problems.append(f"setup: {base.error}")
    detail = f"{len(labels)} label(s)" if labels is not None else ""
    return TaskCheck(spec.task_id, "review", base, (), None, tuple(problems), detail=detail)


def _show(probes: Sequence[Probe]) -> str:
    def word(value: bool | None) -> str:
        return "n/a" if value is None else "pass" if value else "fail"

    return ", ".join(f"verify {word(p.verify_passed)} / oracle {word(p.oracle_passed)}" for p in probes)


def _probe(
    context: TaskContext, settings: CheckSettings, *, patch: bytes | None, judge: bool = True
) -> Probe:
    """Judge one fresh clone (setup, the patch if any, then verify and the hidden oracle)."""
    cancel = settings.cancel or threading.Event()
    cell_dir = make_cell_dir(settings.work_root)
    try:
        workspace = cell_dir / "workspace"
        copy_clone(context.template, workspace)
        sandbox = create_sandbox(
            settings.sandbox_kind,
            workspace=workspace,
            claude_bin=None,
            bwrap_bin=settings.bwrap_bin,
            base_mounts=tuple(
                Mount(source=source, target=f"{SANDBOX_WORKSPACE}/{target}")
                for source, target in context.binding.dependency_mounts
            ),
        )
        spec = context.binding.spec
        if spec.setup:
            result = sandbox.run(
                ["/bin/sh", "-c", spec.setup],
                policy=RunPolicy(workspace_writable=True),
                timeout_s=SETUP_TIMEOUT_S,
                cancel=cancel,
            )
            if not result.ok:
                return Probe(None, None, f"setup failed: {result.describe()}")
        if patch is not None:
            staged = cell_dir / f"reference-{secrets.token_hex(4)}"
            staged.mkdir(mode=0o755)
            (staged / "fix.patch").write_bytes(patch)
            (staged / "fix.patch").chmod(0o444)
            target = "/.wfbench-reference"
            result = sandbox.run(
                git_argv("apply", "--whitespace=nowarn", f"{target}/fix.patch"),
                policy=RunPolicy(workspace_writable=True, mounts=(Mount(source=staged, target=target),)),
                timeout_s=PATCH_TIMEOUT_S,
                cancel=cancel,
            )
            if not result.ok:
                return Probe(None, None, f"reference_patch does not apply: {result.describe()}")
        if not judge:
            return Probe(None, None)
        # The same judges, with the same outcome-report contract, as every cell.
        verify = run_verify(
            sandbox,
            spec.verify,
            scratch=cell_dir,
            min_tests=spec.verify_min_tests,
            timeout_s=settings.timeout_s,
            cancel=cancel,
        )
        oracle = run_hidden_oracle(
            sandbox,
            context.binding.oracle,
            min_tests=spec.oracle.min_tests,
            scratch=cell_dir,
            timeout_s=settings.timeout_s,
            cancel=cancel,
        )
        return Probe(verify.passed, oracle.passed)
    except ChargedFailure as exc:  # a verify or oracle timeout: the task cannot be judged reliably
        return Probe(None, None, f"{exc.kind}: {exc}"[:500])
    except (ProcessError, RuntimeError, OSError) as exc:
        return Probe(None, None, f"{type(exc).__name__}: {exc}"[:500])
    finally:
        remove_tree(cell_dir)


def render_table(results: Sequence[TaskCheck]) -> str:
    """One line per task: base verdicts, reference verdicts over the repeats, and the outcome."""

    def word(value: bool | None) -> str:
        return "-" if value is None else "pass" if value else "fail"

    width = max([len("task"), *(len(r.task_id) for r in results)])
    lines = [
        f"{'task':<{width}}  {'kind':<14}  {'base verify':<11}  {'base oracle':<11}  "
        f"{'ref verify':<10}  {'ref oracle':<10}  result"
    ]
    for r in results:
        ref_verify = (
            f"{sum(1 for p in r.reference if p.verify_passed)}/{len(r.reference)}" if r.reference else "-"
        )
        ref_oracle = (
            f"{sum(1 for p in r.reference if p.oracle_passed)}/{len(r.reference)}" if r.reference else "-"
        )
        base_verify = word(r.base.verify_passed) if r.base else "-"
        base_oracle = word(r.base.oracle_passed) if r.base else "-"
        result = "discriminates" if r.discriminates else "CANNOT DISCRIMINATE: " + "; ".join(r.problems)
        if r.detail:
            result += f" ({r.detail})"
        lines.append(
            f"{r.task_id:<{width}}  {r.kind:<14}  {base_verify:<11}  {base_oracle:<11}  "
            f"{ref_verify:<10}  {ref_oracle:<10}  {result}"
        )
    return "\n".join(lines)
