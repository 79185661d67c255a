"""The proposer session: the real Claude Code CLI in bwrap, writing one overlay and a proposal.

The session runs exactly like a benchmark session (``cells.sessions.run_session`` through a
per-session ``ModelRelay`` that injects the credential, wire evidence cross-checked by
``cells.evidence.apply_wire``), inside the cell's kernel bounds (``CellResources``), but in a
**sanitized clone of the toolkit**: a fresh directory holding only the toolkit's role skills
(regular files, no symlinks) under ``.claude/skills/`` — no task file, oracle, label, result or
repository is in it, so the proposer cannot read what it will be graded on.

Mounts: the clone read-only at ``/workspace``; ``/workspace/.wfbench-output`` (empty) the only
writable path; the evidence bundle read-only at ``/evidence``; the relay socket. Tools: Read,
Grep, Glob, Write, Edit only (no Bash, no Skill, no web), an empty strict MCP config, slash
commands off, no network (bwrap ``--unshare-net``; the model only through the relay).

Afterwards the transcript (redacted) and a session summary are saved beside the generation, and
the output directory's contents are copied out as bytes only after ``overlay_freeze`` accepted
them. A session that is not ``ok`` fails the generation.
"""

from __future__ import annotations

import json
import shutil
import stat
import threading
import uuid
from dataclasses import dataclass
from pathlib import Path

from workflow_bench.cells.evidence import SubagentPolicy, apply_wire
from workflow_bench.cells.sessions import SessionOutcome, SessionRequest, run_session
from workflow_bench.input_files import TreeLimitError, bounded_walk
from workflow_bench.judging.attribution import attribute_session
from workflow_bench.providers.access import CellKey, ModelAccess
from workflow_bench.redaction import printable
from workflow_bench.relay.server import ModelRelay, new_session_key
from workflow_bench.sandbox import (
    MODEL_SOCKET_DIR,
    CellLimits,
    CellResources,
    Mount,
    RunPolicy,
    SandboxKind,
    claude_environment,
    create_sandbox,
    write_runtime_dir,
)
from workflow_bench.toolkit.spec import Toolkit
from workflow_bench.workspace.clone import remove_tree
from workflow_bench.workspace.paths import make_work_root, new_cell_dir_path, relay_socket

from .proposer_prompt import EVIDENCE_MOUNT, OUTPUT_MOUNT, proposer_prompt

PROPOSER_TOOLS = ("Read", "Grep", "Glob", "Write", "Edit")
PROPOSER_DISALLOWED = ("Bash", "Skill", "WebFetch", "WebSearch")
MAX_SKILL_FILES = 256  # a role skill is a few Markdown files; more means the wrong directory
MAX_SKILL_BYTES = 8 * 1024 * 1024
MAX_SKILL_DEPTH = 16  # a skill's reference docs nest a few levels
CLONE_SKILLS = Path(".claude") / "skills"
OUTPUT_DIR = ".wfbench-output"


class ProposerError(RuntimeError):
    """The proposer session failed or could not be set up: the generation fails."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ProposerRun:
    generation: int
    toolkit: Toolkit
    skills: tuple[str, ...]
    required_skills: tuple[str, ...]
    bundle: Path
    access: ModelAccess
    model: str
    effort: str | None
    timeout_s: float
    claude_bin: Path
    bwrap_bin: str
    gen_dir: Path
    """Where the transcript and ``proposer-session.json`` are written."""
    cancel: threading.Event | None = None


def sanitized_clone(toolkit: Toolkit, dest: Path) -> None:
    """Copy only the role skills' regular files into ``dest/.claude/skills/<skill>/``."""
    count = total = 0
    for skill in toolkit.skill_names:
        source = toolkit.skills_path / skill
        try:
            entries = list(bounded_walk(source, max_entries=4 * MAX_SKILL_FILES, max_depth=MAX_SKILL_DEPTH))
        except (TreeLimitError, OSError) as exc:
            raise ProposerError(f"toolkit skill {skill}: {printable(str(exc), 200)}") from None
        for rel, full, info in entries:
            if not stat.S_ISREG(info.st_mode):
                continue  # directories are made below; symlinks and specials never enter the clone
            count, total = count + 1, total + info.st_size
            if count > MAX_SKILL_FILES or total > MAX_SKILL_BYTES:
                raise ProposerError(f"toolkit skills over {MAX_SKILL_FILES} files or {MAX_SKILL_BYTES} bytes")
            target = dest / CLONE_SKILLS / skill / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(full, target)


def run_proposer(run: ProposerRun, *, collect) -> SessionOutcome:
    """Run the session; ``collect(output_dir)`` takes what it wrote before the sandbox is torn down."""
    work_root = make_work_root()
    cell_dir = new_cell_dir_path(work_root)
    resources = CellResources(CellLimits(), cell_dir)
    try:
        resources.open(clone_source=run.toolkit.skills_path)
        workspace = cell_dir / "workspace"
        sanitized_clone(run.toolkit, workspace)
        output = workspace / OUTPUT_DIR
        output.mkdir()
        output.chmod(0o777)  # the sandbox uid writes here (mkdir's mode is masked by umask)
        relay_dir, socket_path = relay_socket(cell_dir)
        relay_dir.mkdir(mode=0o755)
        sandbox = create_sandbox(
            SandboxKind.BWRAP,
            workspace=workspace,
            claude_bin=run.claude_bin,
            runtime_dir=write_runtime_dir(work_root / "runtime"),
            bwrap_bin=run.bwrap_bin,
            resources=resources,
        )
        policy = RunPolicy(
            workspace_writable=False,
            with_claude=True,
            mounts=(
                Mount(source=relay_dir, target=MODEL_SOCKET_DIR),
                Mount(source=run.bundle, target=EVIDENCE_MOUNT),
                Mount(source=output, target=OUTPUT_MOUNT, writable=True),
            ),
        )
        outcome = _session(run, sandbox, policy, socket_path)
        _save(run, outcome, resources.breaches())
        if run.cancel is not None and run.cancel.is_set():
            raise KeyboardInterrupt("proposer cancelled")
        if not outcome.ok:
            raise ProposerError(f"proposer session failed: {outcome.error_kind}: {_detail(outcome)}")
        breaches = resources.breaches()
        if breaches:
            raise ProposerError(f"proposer hit a resource bound: {'; '.join(breaches)}")
        collect(output)
        return outcome
    finally:
        problem = resources.close()
        try:
            remove_tree(work_root)  # iterative: the proposer may have left a 1,100-deep chain
        except OSError as exc:
            problem = f"{problem or ''} {exc}".strip()
        if problem:
            print(f"[evolve] proposer cleanup: {problem}")


def _session(run: ProposerRun, sandbox, policy: RunPolicy, socket_path: Path) -> SessionOutcome:
    key = CellKey(task_id=f"gen-{run.generation}", run=0, arm="proposer")
    credentials = run.access.credentials_for(key)
    session_key = new_session_key()
    secrets = (*credentials.secrets, *run.access.static_secrets, session_key)
    request = SessionRequest(
        prompt=proposer_prompt(
            generation=run.generation, skills=run.skills, required_skills=run.required_skills
        ),
        model=run.model,
        tools=PROPOSER_TOOLS,
        disallowed_tools=PROPOSER_DISALLOWED,
        expected_skill=None,
        env=claude_environment(
            model=run.model,
            max_retries=3,
            api_timeout_ms=int(run.timeout_s * 1000),
            session_key=session_key,
        ),
        timeout_s=run.timeout_s,
        effort=run.effort,
        extra_args=("--disable-slash-commands", f"--add-dir={EVIDENCE_MOUNT}"),
    )
    session_id = str(uuid.uuid4())
    relay = ModelRelay(
        socket_path,
        upstream=run.access.base_url,
        credentials=credentials,
        client_key=session_key,
        session_id=session_id,
        model=run.model,
    )
    print(f"[evolve] gen-{run.generation}: proposer session starting ({run.model})", flush=True)
    with relay:
        outcome = run_session(
            sandbox, request, policy=policy, secrets=secrets, session_id=session_id, cancel=run.cancel
        )
        outcome = attribute_session(outcome, relay.endpoint)
    granted = {t.lower() for t in PROPOSER_TOOLS} - {t.lower() for t in PROPOSER_DISALLOWED}
    spawning = SubagentPolicy(agent_tool=bool(granted & {"agent", "task"}))  # it invokes no skill
    return apply_wire(outcome, relay.record(), expected_skill=None, policy=spawning)


def _detail(outcome: SessionOutcome) -> str:
    return json.dumps(outcome.error_detail, default=str)[:800]


def _save(run: ProposerRun, outcome: SessionOutcome, breaches: list[str]) -> None:
    (run.gen_dir / "proposer-transcript.jsonl").write_bytes(outcome.transcript)
    summary = {
        "ok": outcome.ok,
        "error_kind": outcome.error_kind,
        "error_detail": outcome.error_detail,
        "model": run.model,
        "usage": dict(outcome.usage),
        "usage_wire": dict(outcome.usage_wire),
        "cost_usd": outcome.cost_usd,
        "duration_s": outcome.duration_s,
        "num_turns": outcome.num_turns,
        "tool_use_counts": dict(outcome.tool_use_counts),
        "relay_refused_requests": outcome.relay_refused,
        "resource_breaches": breaches,
        "tools": list(PROPOSER_TOOLS),
    }
    text = json.dumps(summary, indent=2, sort_keys=True, default=str) + "\n"
    (run.gen_dir / "proposer-session.json").write_text(text, encoding="utf-8")
