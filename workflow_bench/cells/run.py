"""One cell: a fresh clone, its sessions, the judges, and the row — returned as data.
Over 400 lines on purpose: the cell lifecycle (clone, sessions, judges, row, cleanup) reads as one sequence.

``run_cell`` owns its clone for the whole call and removes it whatever
happens. It never writes the output directory: the row and the artifacts
(patch, transcripts) come back in a ``CellResult`` and the driver persists
them. It catches ``Exception`` in exactly one place, its top, and records it
as an ``infra-error`` row when no agent process had started yet, else as the
charged ``judging-error`` (``cancelled`` when the sweep's cancellation event is
set); ``KeyboardInterrupt`` propagates. The row is built from typed parts
(``cells.draft.CellDraft`` while the cell runs, ``rows.model.Row`` at the end).
Failures once the agent has run are attributed by ``judging.attribution``: only
host-side evidence excuses them.
The cell runs inside its kernel bounds (``sandbox.CellResources``: its own disk
volume, memory and process cgroups); a cell that hit one is ``resource-limit``,
whatever failed after.

Order inside a cell, and why:
  copy the template → setup (sandbox, no
  network) → sessions (workspace writable; phase boundaries and skill fingerprints checked after
  each) → patch capture → authored verify (workspace read-only, no network) → hidden oracle,
  staged only now, after every model process has exited, as a per-run copy outside the
  workspace (workspace read-only, no network), its output and failure messages never kept, its
  bytes re-checked afterwards → the same oracle in a clean room (a fresh copy of the template with
  exactly the saved patch), whose verdict must agree. The judging stage is ``cells.judges``.

Cost proportional to what changed (issue 26): the cell starts from its template's baseline
(``workspace.baseline``: state, patch-view base commit, HEAD, skill digest, recorded once per
template). Each phase boundary is one scan (``workspace.snapshot.scan_workspace``: lstat every
entry, read only what changed), shared between "after session N" and "before N+1" and with the
judges; the patch view (outside the cell's volume) imports only the changed paths.
"""

from __future__ import annotations

import posixpath
import shlex
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from workflow_bench.arms import ArmSpec, SessionSpec
from workflow_bench.judging.attribution import attribute_session
from workflow_bench.judging.outcomes import ErrorKind
from workflow_bench.judging.test_config import MAX_LISTED
from workflow_bench.process import ProcessError
from workflow_bench.providers.access import CellCredentials, CellKey
from workflow_bench.redaction import redact_value
from workflow_bench.relay.server import ModelRelay, new_session_key
from workflow_bench.review.score import REVIEW_OUTPUT_DIR
from workflow_bench.rows.model import (
    Part,
    Row,
    SessionLayer,
    assemble,
)
from workflow_bench.sandbox import (
    EMPTY_DIR_NAME,
    MODEL_SOCKET_DIR,
    PROJECT_MASK_NAME,
    SANDBOX_WORKSPACE,
    CellResources,
    Mount,
    RunPolicy,
    Sandbox,
    SandboxKind,
    claude_environment,
    create_sandbox,
)
from workflow_bench.taskspec.mounts import task_mounts
from workflow_bench.toolkit.comparator import COMPARATOR_SKILLS, SANDBOX_PLUGIN_DIR
from workflow_bench.toolkit.mcp import JAIL_SOURCE, JAIL_TARGET, SessionMcp, session_mcp
from workflow_bench.workspace.clone import copy_clone
from workflow_bench.workspace.git import git_argv, head_sha, sandbox_git
from workflow_bench.workspace.paths import new_cell_dir_path, relay_socket, view_dir
from workflow_bench.workspace.remove import remove_tree
from workflow_bench.workspace.snapshot import (
    PLAN_DIR,
    SKILLS_DIR,
    WorkspaceLimitError,
    touches_skills,
)

from .boundaries import WorkspaceTrack
from .context import CellResult, SweepSettings, TaskContext
from .draft import CellDraft
from .evidence import SubagentPolicy, apply_wire, wire_lines
from .judges import CellJudges
from .notices import announce_once
from .rows import identity, infra_error, provenance, provider_usage
from .session_fold import progress_observer, sum_sessions
from .sessions import CLI_CONFIG, SessionOutcome, SessionRequest, run_session
from .skill_evidence import forked_skills

SETUP_TIMEOUT_S = 600  # reference value: setup installs/patches, never runs the model


class EvidenceError(ValueError):
    """A phase boundary or skill fingerprint was violated; carries the error kind."""

    def __init__(self, kind: ErrorKind, message: str) -> None:
        super().__init__(message)
        self.kind = kind


def run_cell(settings: SweepSettings, task: TaskContext, arm: ArmSpec, key: CellKey) -> CellResult:
    credentials = settings.access.credentials_for(key)
    # A list: each session's relay key joins it (``_CellRun._sessions``) before the row is redacted.
    cell_secrets = [*credentials.secrets, *settings.access.static_secrets]
    artifacts: dict[str, bytes] = {}
    run: _CellRun | None = None
    cell_dir = new_cell_dir_path(settings.work_root)  # fixed length: the relay socket must fit
    confinement = settings.harness.confinement
    resources = CellResources(
        settings.cell.limits, cell_dir, process_access_denied=confinement.seccomp_process_access
    )
    try:
        if task.index is not None and task.index.error is not None:
            raise RuntimeError(task.index.error)  # memoized per task: no cell of it can run
        baseline = task.sealed()
        bwrap = settings.harness.sandbox_kind is SandboxKind.BWRAP
        resources.open(clone_bytes=baseline.clone_bytes, overlay=bwrap)
        announce_once(settings, resources)
        state = baseline.state
        workspace = cell_dir / "workspace"
        # The clone is an overlay on the sealed template where the host allows one (O(1): root's,
        # the cell uid's through an idmap; a non-root runner's, in its user namespace); otherwise
        # a copy, which the cell's uid then owns: an O(files) chown, before the track adopts the
        # template's digests under the copy's (new) stat keys.
        if not resources.mount_clone(task.template, workspace):
            copy_clone(task.template, workspace, total_bytes=state.total_bytes, entries=len(state.entries))
            if bwrap:
                resources.own(workspace)
        run = _CellRun(settings, task, arm, key, cell_dir, credentials, cell_secrets, artifacts, resources)
        draft = run.execute()
    except Exception as exc:  # the one catch-all: a cell's failure is data, not a sweep crash
        # The sessions finished before the failure: what they spent was spent.
        draft = infra_error(exc, cell_secrets, measured=run.measured if run is not None else None)
        if settings.cancel.is_set():
            draft = draft.with_verdict(error_kind=ErrorKind.CANCELLED)
        elif run is not None and run.agent_started:
            # Once agent code has run, anything may be its doing: never excused as infra.
            draft = draft.with_verdict(error_kind=ErrorKind.JUDGING_ERROR)
    finally:
        breaches, enforced, cleanup_error, counters_error = _release(resources, cell_dir, settings)
    if breaches:
        # The cell's own processes hit a kernel bound: whatever failed after that is the agent's doing.
        draft = draft.failed(ErrorKind.RESOURCE_LIMIT, f"{'; '.join(breaches)} (primary={draft.kind})"[:2000])
    if counters_error is not None:
        # The harness could not read its own counters, or unmount its own mounts (the cell's
        # processes were gone by then): not the agent's doing, so excluded, never charged.
        draft = draft.failed(ErrorKind.INFRA_ERROR, f"primary={draft.kind}: {counters_error}"[:2000])
    if cleanup_error is not None:
        detail = f"primary={draft.kind}: {draft.verdict.error_detail}; cleanup: {cleanup_error}"
        draft = draft.failed(ErrorKind.CLEANUP_FAILURE, detail[:2000])
    try:
        parts = (
            *draft.parts(),
            identity(task, arm, key),
            provenance(settings, task, arm, resource_limits=enforced, clone=resources.clone),
            provider_usage(settings.access, key, artifacts, cell_secrets),
        )
        return CellResult(row=_redacted(parts, cell_secrets), artifacts=artifacts)
    except Exception as exc:  # the row's assembly reads agent output too; a failure there is still data
        fallback = infra_error(exc, cell_secrets)
        fallback = fallback.with_verdict(
            error_detail=f"while assembling the row: {fallback.verdict.error_detail}"
        )
        if run is not None and run.agent_started:
            fallback = fallback.with_verdict(
                error_kind=ErrorKind.JUDGING_ERROR
            )  # holds agent output: charged
        parts = (*fallback.parts(), identity(task, arm, key), provenance(settings, task, arm))
        return CellResult(row=_redacted(parts, cell_secrets), artifacts=artifacts)


def _redacted(parts: tuple[Part, ...], cell_secrets: Sequence[str]) -> Row:
    """The row of ``parts`` with every credential of the cell redacted from every value."""
    return Row.model_validate(redact_value(assemble(*parts).to_json_obj(), cell_secrets))


def _release(
    resources: CellResources, cell_dir: Path, settings: SweepSettings
) -> tuple[list[str], dict | None, str | None, str | None]:
    """Read the bounds hit, then tear the cell down. Never raises.

    Returns (breaches, bounds enforced, cleanup failure, harness failure). Counters the harness
    could not read and a volume it could not release (still mounted after the busy retries and a
    lazy detach) and a patch view it could not remove are harness failures (``infra-error``),
    never charged to the arm: by then every process of the cell is gone. A clone that will not go
    away holds what the agent wrote (``cleanup-failure``, charged).
    """
    problems = []
    breaches: list[str] = []
    enforced = None
    harness: list[str] = []
    try:
        breaches, enforced = resources.breaches(), resources.enforced()
    except Exception as exc:
        harness.append(f"resource counters unreadable: {type(exc).__name__}: {exc}")
    still_mounted = False
    try:
        volume_problem = resources.close()  # the cgroups go too; a busy volume is detached lazily
        if volume_problem is not None:
            harness.append(volume_problem)
            still_mounted = True
        for note in resources.notes:
            settings.progress(f"harness note: {note}")
    except Exception as exc:
        harness.append(f"teardown: {type(exc).__name__}: {exc}")
        still_mounted = True
    if not still_mounted:
        # Never through a mount still in place: deleting through it would not free it.
        failure = _remove(cell_dir)
        problems += [failure] if failure is not None else []
    view_failure = _remove(view_dir(cell_dir))  # harness-owned, never in any sandbox: not the arm's
    harness += [f"patch view: {view_failure}"] if view_failure is not None else []
    return breaches, enforced, "; ".join(problems) or None, "; ".join(harness) or None


def _remove(path: Path) -> str | None:
    try:
        remove_tree(path)
    except (OSError, RecursionError) as exc:  # RecursionError: a directory chain the agent nested deep
        return f"{type(exc).__name__}: {exc}"
    return None


class _CellRun:
    """The mutable state of one cell while it runs (never shared between cells)."""

    def __init__(
        self,
        settings,
        task,
        arm,
        key,
        cell_dir: Path,
        credentials: CellCredentials,
        cell_secrets,
        artifacts,
        resources: CellResources,
    ):
        self.settings: SweepSettings = settings
        self.task: TaskContext = task
        self.arm: ArmSpec = arm
        self.key: CellKey = key
        self.cell_dir = cell_dir
        self.credentials = credentials
        self.secrets = cell_secrets
        self.artifacts = artifacts
        self.resources = resources
        self.measured: SessionLayer | None = None  # the sessions' measurements, once they ran
        self.draft: CellDraft | None = None  # the row so far, once the sessions ran
        self.agent_started = False  # set just before the first session: from then on, failures are charged
        self.sandbox: Sandbox = create_sandbox(
            settings.harness.sandbox_kind,
            workspace=cell_dir / "workspace",
            claude_bin=settings.harness.claude_bin,
            runtime_dir=settings.runtime_dir,
            base_mounts=task_mounts(task.binding),
            bwrap_bin=settings.harness.bwrap_bin,
            resources=resources,
            exec_only_cli=settings.harness.confinement.exec_only_cli,
        )
        # Every read of the workspace from here on: one scan per phase boundary, what changed only.
        # The patch's base is the exact tree on disk before the first session, recorded in a git
        # directory the agent never sees (its .git, index flags and attributes are irrelevant).
        self.track = WorkspaceTrack(
            cell_dir / "workspace",
            task.sealed(),
            view_dir=view_dir(cell_dir),
            excluded=[t for _, t in task.binding.dependency_mounts],
            upper=resources.clone_upper,
        )

    def execute(self) -> CellDraft:
        settings = self.settings
        self._setup()
        if self.arm.candidate_of:
            self._apply_overlay()
        self.track.mark_base()
        skill_digest = self.track.base_skill_digest
        # HEAD moves only through setup or the overlay commit; otherwise it is the template's own.
        ran_before = bool(self.task.binding.spec.setup) or bool(self.arm.candidate_of)
        base_sha = head_sha(self.sandbox) if ran_before else self.task.sealed().head_sha
        outcomes, plan_doc = self._sessions()
        for index, outcome in enumerate(outcomes):
            if outcome.transcript:
                name = f"transcripts/{self.key.slug}-s{index}-{outcome.session_id or 'unknown'}.jsonl"
                self.artifacts[name] = outcome.transcript
            if outcome.wire_summary:
                self.artifacts[f"wire/{self.key.slug}-s{index}.jsonl"] = wire_lines(outcome.wire_summary)
        layer, verdict = sum_sessions(
            outcomes,
            plan_produced=(not self.arm.plans_first) or plan_doc is not None,
            plan_doc=plan_doc,
            skill_digest=skill_digest,
            variant_head_sha=base_sha,
            skills_expected=[s for s in map(self._skill_name, self.arm.sessions) if s is not None],
        )
        layer = layer.model_copy(update={"cli_config_written": self._cli_config_written()})
        self.measured = layer
        self.draft = CellDraft(verdict=verdict, session=layer)
        if settings.cancel.is_set():
            # Keep what the sessions measured; judging a half-finished clone would be noise.
            return self.draft.failed(ErrorKind.CANCELLED, "sweep cancelled")
        judges = CellJudges(
            settings=settings,
            task=self.task,
            arm=self.arm,
            sandbox=self.sandbox,
            track=self.track,
            cell_dir=self.cell_dir,
            secrets=self.secrets,
            artifacts=self.artifacts,
            resources=self.resources,
            review_dir=self.review_dir,
            draft=self.draft,
        )
        return judges.run()

    def _setup(self) -> None:
        """Run the task's untrusted setup; it must leave the seeded skills untouched."""
        spec = self.task.binding.spec
        if spec.setup:
            result = self.sandbox.run(
                ["/bin/sh", "-c", spec.setup],
                policy=RunPolicy(workspace_writable=True),
                timeout_s=SETUP_TIMEOUT_S,
                cancel=self.settings.cancel,
            )
            if not result.ok:
                raise ProcessError("task setup", result)
            self.track.scan()
            if touches_skills(self.track.changed_since_template()):
                raise RuntimeError("task setup changed the seeded skill files")

    @property
    def review_dir(self) -> Path:
        return self.cell_dir / "review-output"

    def _cli_config_written(self) -> list[str] | None:
        """CLI configuration the agent added or changed in the workspace (none of it was read);
        None when the workspace cannot be scanned (the cell is ``workspace-invalid`` already)."""
        try:
            changed = self.track.changed_since_base()
        except WorkspaceLimitError:
            return None
        return sorted(p for p in changed if CLI_CONFIG.search(p))[:MAX_LISTED]

    def _session_policy(self, relay_dir: Path) -> RunPolicy:
        mounts = [Mount(source=relay_dir, target=MODEL_SOCKET_DIR)]
        if self.settings.harness.confinement.harness_settings_only and self.sandbox.kind == SandboxKind.BWRAP:
            # First, so the skills below are bound inside it: the session's .claude is the
            # harness's read-only directory (PROJECT_SETTINGS), whatever the agent wrote there.
            # The host-unsafe backend has no mount namespace to bind it in (it is no boundary:
            # review arms only, `--setting-sources=project` still applies).
            mask = self.settings.runtime_dir / PROJECT_MASK_NAME
            mounts.append(Mount(source=mask, target=f"{SANDBOX_WORKSPACE}/.claude"))
        empty = self.settings.runtime_dir / EMPTY_DIR_NAME
        skills = self.sandbox.workspace / SKILLS_DIR
        skills_target = f"{SANDBOX_WORKSPACE}/{SKILLS_DIR}"
        if self.arm.hide_skills:
            # baseline_nomcp: the seeded skills are masked by an empty read-only dir.
            mounts.append(Mount(source=self.settings.runtime_dir / EMPTY_DIR_NAME, target=skills_target))
        elif skills.is_dir() and not skills.is_symlink():
            # Read-only for the whole session: the agent cannot edit the prose it is judged on.
            mounts.append(Mount(source=skills, target=skills_target))
        if self.arm.family == "comparator" and self.settings.evaluated.comparator is not None:
            mounts.append(
                Mount(source=self.settings.evaluated.comparator.snapshot, target=SANDBOX_PLUGIN_DIR)
            )
        if self.arm.mcp and self.settings.evaluated.toolkit.mcp_servers:
            # What the toolkit's servers need (e.g. a node prefix) and their write jail, read-only.
            toolkit = self.settings.evaluated.toolkit
            mounts += [Mount(source=Path(m.source), target=m.target) for m in toolkit.runtime_mounts]
            mounts.append(Mount(source=JAIL_SOURCE, target=JAIL_TARGET))
        index = self.task.index
        if index is not None and index.digest is not None:
            # The index snapshot read-only for MCP arms (nobody can tamper with it); masked otherwise.
            source = self.task.template / index.output if self.arm.mcp else empty
            mounts.append(Mount(source=source, target=f"{SANDBOX_WORKSPACE}/{index.output}"))
        if self.arm.review:
            # The artifact's directory, outside the read-only workspace: Claude's Write
            # tool writes a temp file and renames it, so a bound *file* would not do.
            mounts.append(Mount(source=self.review_dir, target=REVIEW_OUTPUT_DIR, writable=True))
        return RunPolicy(workspace_writable=not self.arm.review, with_claude=True, mounts=tuple(mounts))

    def _session_args(self) -> tuple[str, ...]:
        args: list[str] = []
        if self.arm.family == "comparator":
            args.append(f"--plugin-dir={SANDBOX_PLUGIN_DIR}")
        if self.arm.review:
            args.append(f"--add-dir={REVIEW_OUTPUT_DIR}")
        if self.arm.hide_skills:
            args.append("--disable-slash-commands")
        return tuple(args)

    def _apply_overlay(self) -> None:
        """Commit the candidate overlay into the clone, after setup, inside the sandbox.

        After setup the clone is untrusted (it may hold planted symlinks), so the
        copy and the commit run sandboxed; only the overlay's own paths are
        committed, never ``-A``: a review task's uncommitted change must stay so.
        """
        overlay = self.settings.evaluated.overlay
        if overlay is None:
            raise RuntimeError(f"arm {self.arm.name} needs a candidate overlay")
        staged = self.cell_dir / "overlay"
        for relative, data in overlay.files:
            (staged / relative).parent.mkdir(parents=True, exist_ok=True)
            (staged / relative).write_bytes(data)
        targets = [f".claude/{relative}" for relative, _ in overlay.files]
        add = shlex.join(git_argv("add", "--"))
        script = f'cp -R /wfbench-overlay/skills/. .claude/skills/ && {add} "$@"'
        result = self.sandbox.run(
            ["/bin/sh", "-c", script, "overlay", *targets],
            policy=RunPolicy(
                workspace_writable=True, mounts=(Mount(source=staged, target="/wfbench-overlay"),)
            ),
            timeout_s=120,
        )
        if not result.ok:
            raise ProcessError("apply candidate overlay", result)
        sandbox_git(
            self.sandbox,
            ["commit", "-q", "--no-verify", "-m", "candidate overlay", "--", *targets],
            what="commit candidate overlay",
            writable=True,
        )
        self.track.scan()
        if not touches_skills(self.track.changed_since_template()):
            raise RuntimeError("the candidate overlay did not change the evaluated skills in the clone")

    def _sessions(self) -> tuple[list[SessionOutcome], str | None]:
        """Run the arm's sessions in order through one relay; stop at the first failed one."""
        settings = self.settings
        relay_dir, socket_path = relay_socket(self.cell_dir)
        relay_dir.mkdir(mode=0o755)
        if self.arm.review:
            self.review_dir.mkdir()
            self.review_dir.chmod(0o777)  # the sandbox uid writes here (mkdir's mode is masked by umask)
        outcomes: list[SessionOutcome] = []
        plan_doc: str | None = None
        for spec in self.arm.sessions:
            label = f"{self.key.label} {spec.phase}"
            settings.progress(f"{label} session starting")
            session_key = new_session_key()
            self.secrets.append(session_key)  # worthless after the session, but never persisted
            env = claude_environment(
                model=settings.cell.model,
                max_retries=settings.cell.max_retries,
                api_timeout_ms=int(settings.cell.session_timeout_s * 1000),
                session_key=session_key,
            )
            request = self._request(spec, env, plan_doc)
            session_id = str(uuid.uuid4())
            # One relay per session: every request it sees belongs to this session's CLI (or to a
            # tool process of it, which the wire evidence then exposes).
            relay = ModelRelay(
                socket_path,
                upstream=settings.access.base_url,
                credentials=self.credentials,
                client_key=session_key,
                session_id=session_id,
                model=settings.cell.model,
                pin_peer=settings.harness.confinement.relay_peer_pin,
            )
            self.agent_started = True
            with relay:
                outcome = run_session(
                    self.sandbox,
                    request,
                    policy=self._session_policy(relay_dir),
                    secrets=self.secrets,
                    cancel=settings.cancel,
                    on_event=progress_observer(settings.progress, label),
                    session_id=session_id,
                )
                # While the relay is open: a request still in flight at a timeout is the endpoint's.
                outcome = attribute_session(outcome, relay.endpoint)
            outcome = apply_wire(
                outcome,
                relay.record(),
                expected_skill=request.expected_skill,
                policy=self._subagent_policy(request),
            )
            try:
                scan = self.track.scan()  # this session's "after" and the next one's "before"
            except WorkspaceLimitError as exc:
                outcomes.append(
                    replace(outcome, ok=False, error_kind=ErrorKind.WORKSPACE_INVALID, error_detail=str(exc))
                )
                break
            try:
                if touches_skills(self.track.changed_since_base()):
                    kind = (
                        ErrorKind.PLAN_EVIDENCE_INVALID
                        if spec.phase == "plan"
                        else ErrorKind.IMPLEMENTATION_EVIDENCE_INVALID
                    )
                    raise EvidenceError(kind, f"{spec.phase} session changed the evaluated skill files")
                if spec.phase == "plan" and outcome.ok:
                    plan_doc = _accepted_plan_doc(tuple(sorted(scan.changed)), scan.state.entries)
            except EvidenceError as exc:
                outcome = replace(outcome, ok=False, error_kind=exc.kind, error_detail=str(exc))
            outcomes.append(outcome)
            if not outcome.ok:
                break
        return outcomes, plan_doc

    def _request(self, spec: SessionSpec, env: Mapping[str, str], plan_doc: str | None) -> SessionRequest:
        settings = self.settings
        skill = self._skill_name(spec)
        prompt = spec.prompt.format(
            task=self.task.binding.spec.prompt, plan=plan_doc or "", skill=skill or ""
        )
        mcp = self.mcp
        return SessionRequest(
            prompt=prompt,
            model=settings.cell.model,
            tools=(*spec.tools, *mcp.granted_tools),
            disallowed_tools=(*spec.disallowed_tools, *mcp.refused_tools),
            mcp_config=mcp.config_json,
            expected_skill=skill,
            env=env,
            timeout_s=settings.cell.session_timeout_s,
            effort=settings.cell.effort,
            extra_args=self._session_args(),
            harness_settings_only=settings.harness.confinement.harness_settings_only,
        )

    def _subagent_policy(self, request: SessionRequest) -> SubagentPolicy:
        """What may spawn a subagent in this session: its own tools, and its skills that fork."""
        granted = {t.lower() for t in request.tools} - {t.lower() for t in request.disallowed_tools}
        forks: frozenset[str] = frozenset()
        if "skill" in granted and not self.arm.hide_skills:
            roots = [self.sandbox.workspace / SKILLS_DIR]
            comparator = self.settings.evaluated.comparator
            if self.arm.family == "comparator" and comparator is not None:
                roots.append(comparator.snapshot / "skills")
            forks = forked_skills(*roots)
        return SubagentPolicy(agent_tool=bool(granted & {"agent", "task"}), forked_skills=forks)

    @property
    def mcp(self) -> SessionMcp:
        return session_mcp(self.settings.evaluated.toolkit, with_mcp=self.arm.mcp)

    def _skill_name(self, spec: SessionSpec) -> str | None:
        if spec.skill_role is None:
            return None
        if self.arm.family == "comparator":
            return COMPARATOR_SKILLS[spec.skill_role]
        return self.settings.evaluated.toolkit.skill_for(spec.skill_role)


def _accepted_plan_doc(changed: tuple[str, ...], after: Mapping[str, str]) -> str:
    """Planning may add or modify exactly one regular file ``docs/plans/<name>.md``, and create
    the directories on its way (``docs``, ``docs/plans``); nothing else.

    Exact components, not a prefix: ``d``, ``doc`` or ``docs/p`` are other paths; a symlink or
    any other non-directory is never "a directory on the way", and the plan must be a real file.
    """
    plans = [p for p in changed if posixpath.dirname(p) == PLAN_DIR and _is_plan_name(posixpath.basename(p))]
    ancestors = {PLAN_DIR.rsplit("/", i)[0] for i in range(PLAN_DIR.count("/") + 1)}
    others = [
        p for p in changed if p not in plans and not (p in ancestors and after.get(p, "").startswith("dir:"))
    ]
    if len(plans) != 1 or others:
        raise EvidenceError(
            ErrorKind.PLAN_EVIDENCE_INVALID,
            f"planning must produce exactly one {PLAN_DIR}/*.md and change nothing else; "
            f"plan docs: {plans[:5]}, other changes: {others[:5]}",
        )
    kind = after.get(plans[0])
    if kind is None:
        raise EvidenceError(ErrorKind.PLAN_EVIDENCE_INVALID, f"planning deleted {plans[0]}")
    if not kind.startswith("file:"):
        raise EvidenceError(
            ErrorKind.PLAN_EVIDENCE_INVALID, f"{plans[0]} is not a regular file ({kind.split(':')[0]})"
        )
    return plans[0]


def _is_plan_name(name: str) -> bool:
    return name.endswith(".md") and len(name) > len(".md")
