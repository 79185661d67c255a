"""Proof of success for verify and the hidden oracle: a nonce-bound outcome report checked from outside.

Contract (README, "Outcome reports"): the harness stages its own kit (``kit/judge_runner.py``,
``kit/unittest_shim.py``) read-only at a random path, mounts a fresh report directory writable
at another random path for this one run, and starts the runner in the sandbox with one JSON
line on stdin: a fresh 128-bit nonce, the report path and the task's command. The runner makes
itself non-dumpable, runs the command in a child with a result pipe, and writes the report after
the child exits. The harness then reads the report on the host (never through a symlink,
bounded) and accepts success only if the nonce matches, the child exited 0, the run said
``done``, at least ``min_tests`` distinct tests ran and every one passed.

Why this holds against code under test: that code runs only in the child. It never sees the
nonce (not in any environment, argv or file; the runner's memory and descriptors are closed to
it by non-dumpability), so anything it writes into the report directory is rejected; exiting 0
early (``os._exit(0)`` in an ``__init__``) leaves too few tests and no ``done``. Known limit:
per-test lines come from the child, so code that deliberately re-implements this protocol from
inside the test process could claim passes for tests it sabotaged; ``min_tests`` and distinct
test ids bound what such a forgery must know (README lists it under known limits).

Must never: keep the oracle's output (it may quote hidden tests) or trust the exit status alone.
"""

from __future__ import annotations

import hmac
import json
import os
import secrets
import shutil
import stat
import threading
from dataclasses import dataclass
from pathlib import Path

from workflow_bench.judging.attribution import ChargedFailure
from workflow_bench.judging.outcomes import ErrorKind
from workflow_bench.process import ProcessError
from workflow_bench.sandbox import BwrapSandbox, Mount, RunPolicy, Sandbox, tool_environment
from workflow_bench.workspace.clone import remove_tree

KIT = Path(__file__).resolve().parent / "kit"
KIT_FILES = ("judge_runner.py", "unittest_shim.py", "review_check.py")
UNITTEST_ENV_VAR = "WORKFLOW_BENCH_UNITTEST"
REVIEW_CHECK_ENV_VAR = "WORKFLOW_BENCH_REVIEW_CHECK"  # the review tasks' authored verify
REPORT_NAME = "outcome.json"
MAX_REPORT_BYTES = 64 * 1024
OUTPUT_TAIL_CHARS = 4000


@dataclass(frozen=True, slots=True)
class JudgeOutcome:
    """What one judged run proved. ``tests_*`` are None when no valid report was found."""

    passed: bool
    detail: str
    output: str
    tests_run: int | None = None
    tests_passed: int | None = None


def run_with_report(
    sandbox: Sandbox,
    command: str,
    *,
    scratch: Path,
    min_tests: int,
    timeout_kind: ErrorKind,
    timeout_s: float,
    cancel: threading.Event,
    mounts: tuple[Mount, ...] = (),
    env_extra: dict[str, str] | None = None,
) -> JudgeOutcome:
    """Run ``command`` under the harness's judge runner; success needs a valid report.

    Raises:
        ChargedFailure: the run exceeded ``timeout_s`` (``timeout_kind``: the agent's code hung).
        ProcessError: the sandbox could not run it at all.
    """
    token = secrets.token_hex(8)
    kit_dir, report_dir = scratch / f"judge-kit-{token}", scratch / f"judge-report-{token}"
    kit_target, report_target = f"/.wfbench-judge-{token}", f"/.wfbench-out-{secrets.token_hex(8)}"
    nonce = secrets.token_hex(16)
    try:
        kit_dir.mkdir()
        for name in KIT_FILES:
            shutil.copyfile(KIT / name, kit_dir / name)
            (kit_dir / name).chmod(0o444)
        report_dir.mkdir()
        report_dir.chmod(0o777)  # the sandbox uid writes the report (mkdir's mode is masked)
        request = {
            "nonce": nonce,
            "report": f"{report_target}/{REPORT_NAME}",
            "command": command,
            # kill(-1) is safe only inside a PID namespace of its own (never under --unsafe-no-bwrap).
            "reap": isinstance(sandbox, BwrapSandbox),
        }
        env = {
            **(env_extra or {}),
            UNITTEST_ENV_VAR: f"{kit_target}/unittest_shim.py",
            REVIEW_CHECK_ENV_VAR: f"{kit_target}/review_check.py",
        }
        result = sandbox.run(
            ["python3", "-I", "-B", f"{kit_target}/judge_runner.py"],
            policy=RunPolicy(
                workspace_writable=False,
                mounts=(
                    *mounts,
                    Mount(source=kit_dir, target=kit_target),
                    Mount(source=report_dir, target=report_target, writable=True),
                ),
            ),
            env=tool_environment(env),
            stdin=(json.dumps(request) + "\n").encode(),
            timeout_s=timeout_s,
            cancel=cancel,
        )
        if result.state == "timeout":
            raise ChargedFailure(timeout_kind, f"{command[:80]!r} exceeded {timeout_s:.0f} s")
        if result.state != "exited":
            raise ProcessError("judge runner", result)
        output = (result.stdout.decode("utf-8", "replace") + result.stderr_tail)[-OUTPUT_TAIL_CHARS:]
        return check_report(
            _read_report(report_dir / REPORT_NAME), nonce=nonce, min_tests=min_tests, output=output
        )
    finally:
        remove_tree(kit_dir)
        remove_tree(report_dir)  # the code under test could write here: any depth, any modes


def _read_report(path: Path) -> bytes | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    # fstat before fdopen: fdopen raises IsADirectoryError on a directory, which would turn a
    # directory the code under test made at the report path into a harness crash.
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        return None
    with os.fdopen(fd, "rb") as handle:
        return handle.read(MAX_REPORT_BYTES + 1)


def check_report(data: bytes | None, *, nonce: str, min_tests: int, output: str = "") -> JudgeOutcome:
    """The verdict on one report (pure). Every reason for refusal is named in ``detail``."""

    def refuse(reason: str, report: dict | None = None) -> JudgeOutcome:
        run = _count(report, "tests_run") if report else None
        passed = _count(report, "tests_passed") if report else None
        return JudgeOutcome(False, f"no proof of success: {reason}", output, run, passed)

    if data is None:
        return refuse("no outcome report was written")
    if len(data) > MAX_REPORT_BYTES:
        return refuse("the outcome report is oversized")
    try:
        report = json.loads(data)
    except ValueError:
        return refuse("the outcome report is not JSON")
    if not isinstance(report, dict) or not isinstance(report.get("nonce"), str):
        return refuse("the outcome report has no nonce")
    if not hmac.compare_digest(report["nonce"].encode(), nonce.encode()):
        return refuse("the outcome report's nonce is not this run's (forged or stale)")
    run, passed, exit_code = (
        _count(report, "tests_run"),
        _count(report, "tests_passed"),
        report.get("exit_code"),
    )
    if run is None or passed is None or type(exit_code) is not int:
        return refuse("the outcome report is malformed", report)
    if report.get("done") is not True:
        return refuse(f"the test run did not complete ({run} tests reported, exit {exit_code})", report)
    if exit_code != 0:
        return refuse(f"the command exited {exit_code}", report)
    if run < min_tests:
        return refuse(f"{run} tests ran, the task declares at least {min_tests}", report)
    if passed != run:
        return refuse(f"{run - passed} of {run} tests did not pass", report)
    return JudgeOutcome(True, f"{passed}/{run} tests passed (outcome report verified)", output, run, passed)


def _count(report: dict, key: str) -> int | None:
    value = report.get(key)
    return value if type(value) is int and value >= 0 else None
