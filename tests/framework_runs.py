"""Running the framework projects (tests/framework_projects.py) in the real sandbox: a workspace of
a project's base or fix, a bwrap sandbox over it with its dependency trees mounted, verify and the
hidden oracle run through the harness's own judge, and the outcome's ids. Shared by the component
tests of the frameworks and of the claimed vitest versions (no test module imports another's).
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

from tests.framework_projects import Project, write_files
from workflow_bench.judging.judge import run_hidden_oracle, run_verify
from workflow_bench.judging.outcome_report import JudgeOutcome
from workflow_bench.judging.verdict import Expectation, for_task
from workflow_bench.sandbox import Mount, SandboxKind, create_sandbox
from workflow_bench.taskspec.oracles import OracleFile, OracleSnapshot

COUNT = for_task(min_tests=1, expected=None, report_required=True)


def lock(passed, skipped=()) -> Expectation:
    return for_task(min_tests=None, expected=(tuple(passed), tuple(skipped)), report_required=True)


def workspace(tmp_path: Path, project: Project, *, fixed: bool, extra: dict[str, str] | None = None) -> Path:
    ws = tmp_path / f"ws-{project.task_id}-{'fix' if fixed else 'base'}-{os.urandom(3).hex()}"
    write_files(ws, {**project.base, **(project.fix if fixed else {}), **(extra or {})})
    for directory in project.dependencies:
        (ws / directory).mkdir()  # the mount point, as a template has it
    return ws


def sandbox(ws: Path, bwrap_bin: str, mounts: dict[str, Path]):
    base = tuple(
        Mount(source=src, target=f"/workspace/{dst}", scratch_top=True) for dst, src in mounts.items()
    )
    return create_sandbox(
        SandboxKind.BWRAP, workspace=ws, claude_bin=None, bwrap_bin=bwrap_bin, base_mounts=base
    )


def verify(
    sandbox, command: str, expectation: Expectation, tmp_path: Path, *, timeout_s: float = 120
) -> JudgeOutcome:
    scratch = tmp_path / f"scratch-{os.urandom(4).hex()}"
    scratch.mkdir()
    outcome = run_verify(
        sandbox,
        command,
        scratch=scratch,
        expectation=expectation,
        timeout_s=timeout_s,
        cancel=threading.Event(),
    )
    assert not list(scratch.iterdir()), "the kit, report and JUnit directories are removed"
    return outcome


def oracle_snapshot(project: Project) -> OracleSnapshot:
    files = tuple(OracleFile.of(name, text.encode()) for name, text in project.oracle.items())
    return OracleSnapshot(command=project.oracle_command, files=files)


def ids(outcome: JudgeOutcome) -> dict[str, str]:
    return {t.test_id: t.outcome for t in outcome.tests or ()}


def oracle(sandbox, snapshot, expectation, tmp_path) -> JudgeOutcome:
    scratch = tmp_path / f"scratch-{os.urandom(4).hex()}"
    scratch.mkdir()
    outcome = run_hidden_oracle(
        sandbox, snapshot, expectation=expectation, scratch=scratch, timeout_s=120, cancel=threading.Event()
    )
    assert not list(scratch.iterdir())
    return outcome


TS_IDS = ("counts up", "takes steps", "counts down with a negative step")
TS_SKIP = "streams huge ranges lazily (needs the iterator API)"
