"""Task self-check: can each task tell a fix from no fix, before anyone pays for a sweep?

``check_tasks`` judges every task in the real sandbox, with the same judge functions a cell
uses (``judging.judge.run_verify`` / ``run_hidden_oracle``; no second oracle runner), on fresh
clones of the same sanitized template a cell gets:

- **implementation tasks** — with the task's ``reference_patch`` applied, verify and the oracle
  must both pass, on each of ``repeats`` fresh clones, reporting the same tests each time; those
  tests become the task's **expected tests**, written to the lock beside the task file
  (``tasks.expected_tests``; ``frozen`` only compares). On the untouched base (after ``setup``)
  the hidden oracle must have run its tests and failed at least one expected test, and verify
  must fail unless the task declares ``base_expected: {verify: pass}`` (authored tests that do
  not cover the defect yet). Every verdict is the one a sweep would reach with the new lock
  (``check_expected``). A task without a reference patch is reported as not proven.
- **review tasks** (the oracle stages ``review-labels.json``) — there is no fix to apply: the
  reviewer is judged on its artifact against the labels. The check is that ``setup`` applies
  the change under review, the labels parse under the artifact contract's field rules, and a
  ``review-defect`` case has at least one label while a ``review-clean`` control has none.

A task that fails any of these "cannot discriminate": ``main`` prints, per probe, the judge's
reason, the test counts and the first failing tests, then one table line per task, and exits 1
naming them. The reference patch is read here (bounded, no symlinks) and by the oracle agent,
never by a normal cell.

Callers: ``python -m workflow_bench.tasks check``, ``runner --check-tasks``.
"""

from __future__ import annotations

import hashlib
import secrets
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from workflow_bench.cells.context import TaskContext, prepare_task_context
from workflow_bench.judging.attribution import ChargedFailure
from workflow_bench.judging.judge import oracle_expectation, run_hidden_oracle, run_verify, verify_expectation
from workflow_bench.judging.outcome_report import JudgeOutcome
from workflow_bench.judging.verdict import SHOWN_IDS, summary
from workflow_bench.process import ProcessError
from workflow_bench.review.contract import REVIEW_LABELS_TARGET
from workflow_bench.review.labels import ReviewLabelsError, labels_from_oracle
from workflow_bench.sandbox import Mount, RunPolicy, SandboxKind, create_sandbox
from workflow_bench.taskspec.expected_tests import (
    ExpectedTests,
    load_lock,
    lock_path,
    subject_changes,
    write_lock,
)
from workflow_bench.taskspec.mounts import task_mounts
from workflow_bench.taskspec.oracles import read_beneath
from workflow_bench.taskspec.schema import MAX_REFERENCE_PATCH_BYTES, TaskSpecError
from workflow_bench.taskspec.spec import TaskBinding
from workflow_bench.toolkit.spec import Toolkit
from workflow_bench.workspace.clone import copy_clone
from workflow_bench.workspace.git import git_argv
from workflow_bench.workspace.paths import make_cell_dir
from workflow_bench.workspace.remove import remove_tree

from .check_expected import Probe, discrimination_problems, record
from .output_tail import output_tail

DEFAULT_REPEATS = 3  # the brief's determinism bar: three fresh clones, identical verdicts
SETUP_TIMEOUT_S = 600  # keep in sync with cells.run.SETUP_TIMEOUT_S
PATCH_TIMEOUT_S = 120


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
    expected: ExpectedTests | None = None
    """The expected tests the reference runs recorded (implementation tasks that discriminate)."""
    lock_note: str = ""
    """What happened to the task's lock entry: recorded, unchanged, refreshed (and why), kept."""
    impossible: bool = False
    """A cheating probe: shown impossible (not discriminating) when ``problems`` is empty."""

    @property
    def discriminates(self) -> bool:
        return not self.problems

    @property
    def verdict_word(self) -> str:
        return "impossible (the honest reference fails the oracle)" if self.impossible else "discriminates"


@dataclass(frozen=True, slots=True)
class CheckSettings:
    toolkit: Toolkit
    bwrap_bin: str
    work_root: Path
    sandbox_kind: SandboxKind = SandboxKind.BWRAP
    timeout_s: float = 600
    repeats: int = DEFAULT_REPEATS
    cancel: threading.Event | None = None
    frozen: bool = False
    """Compare with the lock but never write it; a lock that would change is a problem."""


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
    """Check every task, then bring each task file's lock up to date (unless ``frozen``)."""
    results = []
    for binding in bindings:
        progress(f"[check] {binding.spec.task_id}")
        context = prepare_task_context(
            binding, toolkit=settings.toolkit, dest=settings.work_root / "templates" / binding.spec.task_id
        )
        if is_review_task(binding):
            results.append(_check_review(context, settings))
        else:
            results.append(_check_implementation(context, settings, progress=progress))
    return _update_locks(bindings, results, frozen=settings.frozen)


def _check_implementation(
    context: TaskContext, settings: CheckSettings, *, progress: Callable[[str], None]
) -> TaskCheck:
    binding = context.binding
    spec = binding.spec
    base = _probe(context, settings, patch=None)
    patch = reference_patch_bytes(binding)
    reference: list[Probe] = []
    problems: list[str] = []
    entry: ExpectedTests | None = None
    if patch is None:
        problems.append("no reference_patch: nothing shows verify and the oracle can pass")
    else:
        for _ in range(settings.repeats):
            reference.append(_probe(context, settings, patch=patch))
            if reference[-1].error:
                break
        if not base.error and not any(p.error for p in reference):
            entry, problems = record(binding.lock_subject, base, reference, impossible=spec.impossible)
    # Judged as a sweep would judge them: with the entry recorded now, else as the task stands.
    judging = entry if entry is not None else binding.expected_tests
    verify_exp, oracle_exp = verify_expectation(spec, judging), oracle_expectation(spec, judging)
    base = base.under(verify_exp, oracle_exp)
    reference = [p.under(verify_exp, oracle_exp) for p in reference]
    problems += discrimination_problems(spec, base, reference, entry)
    for label, probe in (("base", base), *((f"reference {i}", p) for i, p in enumerate(reference, 1))):
        for line in probe_lines(probe):
            progress(f"[check] {spec.task_id} {label} {line}")
    digest = hashlib.sha256(patch).hexdigest() if patch is not None else None
    return TaskCheck(
        task_id=spec.task_id,
        kind="implementation",
        base=base,
        reference=tuple(reference),
        reference_digest=digest,
        problems=tuple(dict.fromkeys(problems)),
        detail=f"reference sha256 {digest[:12]}" if digest is not None else "",
        expected=entry if not problems else None,
        impossible=spec.impossible,
    )


def probe_lines(probe: Probe) -> list[str]:
    """One line per judge of a probe: verdict, reason, counts, first failing tests."""
    if probe.error:
        return [f"error: {probe.error}"]
    lines = []
    for name, outcome in (("verify", probe.verify), ("oracle", probe.oracle)):
        if outcome is None:
            continue
        lines.append(f"{name}: {'pass' if outcome.passed else 'fail'} ({_counts(outcome)}): {outcome.detail}")
        # A run that reported no test at all failed before its tests (a missing plugin, a config
        # error): its last lines say why. Only verify's output exists; the oracle's is never kept.
        if not outcome.passed and not (outcome.tests or ()) and outcome.output.strip():
            lines += [f"  {name} output: {line[:300]}" for line in output_tail(outcome.output)]
    return lines


def _counts(outcome: JudgeOutcome) -> str:
    """The counts, and the first failing ids unless the verdict already names them."""
    evidence = outcome.evidence
    if evidence is None:
        return "no report"
    failing = [t.test_id for t in evidence.failing][:SHOWN_IDS]
    named = not failing or failing[0] in outcome.detail
    return summary(evidence) + ("" if named else f"; first failing: {', '.join(failing)}")


def _update_locks(
    bindings: Sequence[TaskBinding], results: list[TaskCheck], *, frozen: bool
) -> list[TaskCheck]:
    """Write each task file's lock with the entries recorded now (other tasks' entries kept), or,
    ``frozen``, only compare; note per task what changed."""
    by_file: dict[Path, list[tuple[TaskBinding, int]]] = {}
    for index, binding in enumerate(bindings):
        if results[index].kind == "implementation":
            by_file.setdefault(lock_path(binding.spec.source_file), []).append((binding, index))
    for path, members in by_file.items():
        broken = False
        try:
            existing = load_lock(path) or {}
        except TaskSpecError:  # unusable: written anew from what was recorded now
            existing, broken = {}, True
        entries = dict(existing)
        for binding, index in members:
            check, task_id = results[index], binding.spec.task_id
            old = existing.get(task_id)
            if check.expected is None:
                note = "kept (nothing recorded: the task cannot discriminate)" if old is not None else "none"
                results[index] = replace(check, lock_note=note)
                continue
            note = _lock_note(old, check.expected, binding, broken=broken)
            problems = check.problems
            if frozen and note != "unchanged":
                problems = (
                    *problems,
                    f"the expected-tests lock {path.name} is out of date: it would be {note}",
                )
                note = f"not written (--frozen): {note}"
            entries[task_id] = check.expected
            results[index] = replace(check, lock_note=note, problems=problems)
        if not frozen and (entries != existing or broken):
            try:
                write_lock(path, entries)
            except OSError as exc:  # the check ran; say that its record could not be kept
                for _, index in members:
                    problem = f"the expected-tests lock {path} could not be written: {exc.strerror or exc}"
                    results[index] = replace(results[index], problems=(*results[index].problems, problem))
    return results


def _lock_note(old: ExpectedTests | None, new: ExpectedTests, binding: TaskBinding, *, broken: bool) -> str:
    if old is None:
        return "recorded (the old lock was unusable)" if broken else "recorded"
    if old == new:
        return "unchanged"
    changed = subject_changes(old.subject, binding.lock_subject)
    if changed:
        return f"refreshed (stale: {', '.join(changed)} changed)"
    return f"refreshed (tests changed: {_id_changes(old, new)})"


def _id_changes(old: ExpectedTests, new: ExpectedTests) -> str:
    parts = []
    for name in ("verify", "oracle"):
        before, after = getattr(old, name), getattr(new, name)
        was = set(before.passed) | set(before.skipped) if before else set()
        now = set(after.passed) | set(after.skipped) if after else set()
        if was != now or before != after:
            parts.append(f"{name} +{len(now - was)} -{len(was - now)}")
    return ", ".join(parts) or "outcomes"


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
            base_mounts=task_mounts(context.binding),
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
        # The same judges, with the same outcome-report contract, as every cell; the caller
        # re-judges the evidence against the expected tests recorded from the reference runs.
        verify = run_verify(
            sandbox,
            spec.verify,
            scratch=cell_dir,
            expectation=verify_expectation(spec, context.binding.expected_tests),
            timeout_s=settings.timeout_s,
            cancel=cancel,
        )
        oracle = run_hidden_oracle(
            sandbox,
            context.binding.oracle,
            expectation=oracle_expectation(spec, context.binding.expected_tests),
            scratch=cell_dir,
            timeout_s=settings.timeout_s,
            cancel=cancel,
        )
        return Probe(verify, oracle)
    except ChargedFailure as exc:  # a verify or oracle timeout: the task cannot be judged reliably
        return Probe(None, None, f"{exc.kind}: {exc}"[:500])
    except (ProcessError, RuntimeError, OSError) as exc:
        return Probe(None, None, f"{type(exc).__name__}: {exc}"[:500])
    finally:
        remove_tree(cell_dir)


def render_table(results: Sequence[TaskCheck]) -> str:
    """One line per task: base verdicts, reference verdicts over the repeats, the outcome, the
    expected tests recorded and what happened to the lock."""

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
        result = r.verdict_word if r.discriminates else "CANNOT DISCRIMINATE: " + "; ".join(r.problems)
        details = [r.detail] if r.detail else []
        if r.expected is not None:
            details.append(f"expected tests: {r.expected.describe()}")
        if r.lock_note and r.lock_note != "none":
            details.append(f"lock {r.lock_note}")
        if details:
            result += f" ({'; '.join(details)})"
        lines.append(
            f"{r.task_id:<{width}}  {r.kind:<14}  {base_verify:<11}  {base_oracle:<11}  "
            f"{ref_verify:<10}  {ref_oracle:<10}  {result}"
        )
    return "\n".join(lines)
