"""Proof of success for verify and the hidden oracle: a nonce-bound outcome report checked from outside.

Contract (README, "Outcome reports"): the harness stages its own kit (``kit/``: the judge runner
and the adapters) read-only at a random path, mounts a fresh report directory and a fresh, empty
JUnit directory, each writable at another random path for this one run, and starts the runner
in the sandbox with one JSON line on stdin: a fresh 128-bit nonce, the report path, the channel
and JUnit paths, the deadline and the task's command. The runner makes itself non-dumpable, runs
the command in a child, collects result lines as they arrive, and after the child exits (every
leftover process killed) attests every JUnit file by size and sha256 in the report. The harness
then reads the report on the host (never through a symlink, bounded), parses only the JUnit bytes
the report attests (``judging.junit``), and hands the merged results to the one verdict
function (``judging.verdict``).

Why this holds against code under test: that code runs only in the child. It never sees the
nonce (not in any environment, argv or file; the runner's memory and descriptors are closed to
it by non-dumpability), so anything it writes as a report is rejected; a JUnit file changed after
the attestation no longer matches it; exiting 0 early (``os._exit(0)`` in an ``__init__``)
leaves too few tests and no completed run. Known limit: the results themselves come from the
child, so code that deliberately re-implements a framework's reporting from inside the test
process could claim passes for tests it sabotaged (sealing: issue 23; the runner owns both
channels, so sentinels and an early close belong there).

Must never: keep the oracle's output (it may quote hidden tests) or trust the exit status alone.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import shutil
import stat
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workflow_bench.frameworks import KIT as FRAMEWORK_KIT_DIR
from workflow_bench.frameworks import kit_files as framework_kit_files
from workflow_bench.judging.attribution import ChargedFailure
from workflow_bench.judging.junit import JUnitError, parse_junit
from workflow_bench.judging.outcomes import ErrorKind
from workflow_bench.judging.sentinels import SentinelPlan, split
from workflow_bench.judging.verdict import (
    Expectation,
    RunEvidence,
    TestResult,
    Verdict,
    merge_results,
    summary,
    verdict,
)
from workflow_bench.process import ProcessError
from workflow_bench.sandbox import BwrapSandbox, Mount, RunPolicy, Sandbox, tool_environment
from workflow_bench.workspace.remove import remove_tree

KIT = Path(__file__).resolve().parent / "kit"
# The registry's frameworks' adapters (``frameworks/kit``), staged into the same directory.
FRAMEWORK_KIT = framework_kit_files()
KIT_FILES = (
    "judge_runner.py",
    "wfbench_result_channel.py",
    "wfbench_framework_guard.py",
    "unittest_shim.py",
    "pytest_run.py",
    "review_check.py",
    "wfbench_result_channel.cjs",
    "vitest_reporter.mjs",
    "jest_reporter.cjs",
    "wfbench_framework_guard.cjs",  # preloaded by the runner into every node process (NODE_OPTIONS)
    "wfbench_vitest_guard.mjs",  # the vitest reporter's first setup file for it
    "wfbench_vitest_ready.mjs",  # and its last
)
# The variables a task's command uses to reach the kit (README, "Outcome reports"). The runner
# itself exports WORKFLOW_BENCH_JUNIT, _JUNIT_DIR, _RESULT_PIPE and _RESULT_FD for the child.
KIT_ENV = {
    "WORKFLOW_BENCH_UNITTEST": "unittest_shim.py",
    "WORKFLOW_BENCH_PYTEST": "pytest_run.py",
    "WORKFLOW_BENCH_VITEST_REPORTER": "vitest_reporter.mjs",
    "WORKFLOW_BENCH_JEST_REPORTER": "jest_reporter.cjs",
    "WORKFLOW_BENCH_REVIEW_CHECK": "review_check.py",  # the review tasks' authored verify
}
REPORT_NAME = "outcome.json"
CHANNEL_NAME = "results.pipe"
# The report holds every test's id and message: the runner reads at most 8 MiB of result lines.
MAX_REPORT_BYTES = 16 * 1024 * 1024
MAX_JUNIT_FILE_BYTES = 16 * 1024 * 1024  # keep in sync with kit/judge_runner.py
MAX_TAMPERED = 20  # keep in sync with kit/judge_runner.py
MAX_TAMPERED_CHARS = 1000
OUTPUT_TAIL_CHARS = 4000
# The runner stops the command at the deadline itself, then attests up to 32 MiB of JUnit and
# writes the report; the sandbox is killed only if that takes longer than this on top.
RUNNER_GRACE_S = 20.0


@dataclass(frozen=True, slots=True)
class JudgeOutcome:
    """What one judged run proved: the verdict, and the evidence it was drawn from."""

    passed: bool
    detail: str
    output: str
    evidence: RunEvidence | None = None
    tampered: bool = False
    """The report shows forgery (``judging.sentinels``): ``evidence-tampered``."""
    sealed: bool | None = None
    """The run's sentinel tests were all reported as planned; None: it carried none."""

    @property
    def tests_run(self) -> int | None:
        return self.evidence.tests_run if self.evidence else None

    @property
    def tests_passed(self) -> int | None:
        return self.evidence.tests_passed if self.evidence else None

    @property
    def tests_skipped(self) -> int | None:
        return self.evidence.tests_skipped if self.evidence else None

    @property
    def tests(self) -> tuple[TestResult, ...] | None:
        return self.evidence.tests if self.evidence else None

    def judged(self, expectation: Expectation) -> JudgeOutcome:
        """The same evidence under another expectation (the self-check records, then judges)."""
        if self.evidence is None:
            return self
        return JudgeOutcome.of(verdict(self.evidence, expectation), self.output, self.evidence)

    @classmethod
    def of(cls, found: Verdict, output: str, evidence: RunEvidence | None) -> JudgeOutcome:
        return cls(found.passed, found.detail, output, evidence, found.tampered, found.sealed)


def run_with_report(
    sandbox: Sandbox,
    command: str,
    *,
    scratch: Path,
    expectation: Expectation,
    timeout_kind: ErrorKind,
    timeout_s: float,
    cancel: threading.Event,
    mounts: tuple[Mount, ...] = (),
    env_extra: dict[str, str] | None = None,
    sentinels: SentinelPlan | None = None,
) -> JudgeOutcome:
    """Run ``command`` under the harness's judge runner and judge it against ``expectation``;
    ``sentinels``: the sentinel tests staged for this run (their results are judged apart).

    Raises:
        ChargedFailure: the run exceeded ``timeout_s`` (``timeout_kind``: the agent's code hung);
            its ``outcome`` holds the tests that reported before the deadline.
        ProcessError: the sandbox could not run it at all.
    """
    token = secrets.token_hex(8)
    kit_dir, report_dir = scratch / f"judge-kit-{token}", scratch / f"judge-report-{token}"
    junit_dir = scratch / f"judge-junit-{token}"
    kit_target = f"/.wfbench-judge-{token}"
    report_target = f"/.wfbench-out-{secrets.token_hex(8)}"
    junit_target = f"/.wfbench-junit-{secrets.token_hex(8)}"
    nonce = secrets.token_hex(16)
    try:
        kit_dir.mkdir()
        for source in (
            *(KIT / n for n in KIT_FILES),
            *(FRAMEWORK_KIT_DIR / n for n in FRAMEWORK_KIT.values()),
        ):
            shutil.copyfile(source, kit_dir / source.name)
            (kit_dir / source.name).chmod(0o444)
        for directory in (report_dir, junit_dir):
            directory.mkdir()
            directory.chmod(0o777)  # the sandbox uid writes here (mkdir's mode is masked)
        request = {
            "nonce": nonce,
            "report": f"{report_target}/{REPORT_NAME}",
            "channel": f"{report_target}/{CHANNEL_NAME}",
            "junit_dir": junit_target,
            "deadline_s": timeout_s,
            "command": command,
            # kill(-1) is safe only inside a PID namespace of its own (never under --unsafe-no-bwrap).
            "reap": isinstance(sandbox, BwrapSandbox),
        }
        env = {
            **(env_extra or {}),
            **{var: f"{kit_target}/{name}" for var, name in {**KIT_ENV, **FRAMEWORK_KIT}.items()},
        }
        result = sandbox.run(
            ["python3", "-I", "-B", f"{kit_target}/judge_runner.py"],
            policy=RunPolicy(
                workspace_writable=False,
                mounts=(
                    *mounts,
                    Mount(source=kit_dir, target=kit_target),
                    Mount(source=report_dir, target=report_target, writable=True),
                    Mount(source=junit_dir, target=junit_target, writable=True),
                ),
            ),
            env=tool_environment(env),
            stdin=(json.dumps(request) + "\n").encode(),
            timeout_s=timeout_s + RUNNER_GRACE_S,
            cancel=cancel,
        )
        if result.state == "timeout":
            raise ChargedFailure(timeout_kind, f"{command[:80]!r} exceeded {timeout_s:.0f} s")
        if result.state != "exited":
            raise ProcessError("judge runner", result)
        output = (result.stdout.decode("utf-8", "replace") + result.stderr_tail)[-OUTPUT_TAIL_CHARS:]
        report = _read_bounded(report_dir / REPORT_NAME, MAX_REPORT_BYTES)
        evidence = read_evidence(report, nonce=nonce, junit_dir=junit_dir, sentinels=sentinels)
        outcome = JudgeOutcome.of(verdict(evidence, expectation), output, evidence)
        if evidence.timed_out:
            raise ChargedFailure(
                timeout_kind,
                f"{command[:80]!r} exceeded {timeout_s:.0f} s; before that: {summary(evidence)}",
                outcome=outcome,
            )
        return outcome
    finally:
        remove_tree(kit_dir)
        remove_tree(report_dir)  # the code under test could write here: any depth, any modes
        remove_tree(junit_dir)


def _read_bounded(path: Path, max_bytes: int) -> bytes | None:
    """A regular file's bytes, up to one past ``max_bytes`` (enough to say "oversized"); None if
    absent, a symlink, or not a regular file. Never blocks on a FIFO."""
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
        return handle.read(max_bytes + 1)


def read_evidence(
    data: bytes | None, *, nonce: str, junit_dir: Path | None, sentinels: SentinelPlan | None = None
) -> RunEvidence:
    """What one report proves (pure but for reading the attested JUnit files under ``junit_dir``);
    the results of ``sentinels`` are kept apart from the tests."""
    if data is None:
        return RunEvidence(problem="the judge runner wrote no outcome report (killed, or it could not run)")
    if len(data) > MAX_REPORT_BYTES:
        return RunEvidence(problem="the outcome report is oversized")
    try:
        report = json.loads(data)
    except ValueError:
        return RunEvidence(problem="the outcome report is not JSON")
    if not isinstance(report, dict) or not isinstance(report.get("nonce"), str):
        return RunEvidence(problem="the outcome report has no nonce")
    if not hmac.compare_digest(report["nonce"].encode(), nonce.encode()):
        return RunEvidence(problem="the outcome report's nonce is not this run's (forged or stale)")
    exit_code, lines = report.get("exit_code"), _lines(report.get("tests"))
    attested, refused = report.get("junit"), report.get("junit_refused")
    flags = [report.get(k) for k in ("done", "timed_out")]
    decoy_bytes = report.get("decoy_bytes")
    tampered = report.get("tampered", [])
    if (
        not isinstance(tampered, list)
        or len(tampered) > MAX_TAMPERED
        or not all(isinstance(t, str) and len(t) <= MAX_TAMPERED_CHARS for t in tampered)
    ):
        return RunEvidence(problem="the outcome report is malformed")
    if (
        type(exit_code) is not int
        or type(decoy_bytes) is not int
        or decoy_bytes < 0
        or lines is None
        or not isinstance(attested, list)
        or not all(type(flag) is bool for flag in flags)
        or not (refused is None or isinstance(refused, str))
    ):
        return RunEvidence(problem="the outcome report is malformed")
    done, timed_out = flags[0] is True, flags[1] is True  # both checked to be bools above
    if refused is not None:
        return RunEvidence(problem=f"the JUnit report was refused: {refused[:300]}", exit_code=exit_code)
    cases: list[tuple[str, str, str | None]] = []
    for entry in attested:
        found = _attested_cases(entry, junit_dir)
        if isinstance(found, str):
            return RunEvidence(problem=found, exit_code=exit_code)
        cases += found
    sources = tuple(
        name for name, used in (("lines", bool(lines) or done), ("junit", bool(attested))) if used
    )
    tests = merge_results([*lines, *cases]) if sources else None
    plan = sentinels or SentinelPlan()
    planted: tuple[TestResult, ...] = ()
    if tests is not None and plan.sentinels:
        tests, planted = split(tests, plan)
    return RunEvidence(
        exit_code=exit_code,
        complete=done or bool(attested),
        timed_out=timed_out,
        tests=tests,
        sources=sources,
        plan=plan,
        sentinel_results=planted,
        decoy_bytes=decoy_bytes,
        tampered=tuple(tampered),
    )


def _lines(value: Any) -> list[tuple[str, str, str | None]] | None:
    """The report's result lines as (id, outcome, message), or None if malformed."""
    if not isinstance(value, dict):
        return None
    out = []
    for test_id, entry in value.items():
        if not isinstance(entry, list) or len(entry) != 2:
            return None
        outcome, message = entry
        if not isinstance(outcome, str) or not (message is None or isinstance(message, str)):
            return None
        out.append((test_id, outcome, message))
    return out


def _attested_cases(entry: Any, junit_dir: Path | None) -> list[tuple[str, str, str | None]] | str:
    """The test cases of one attested JUnit file, or why it is no evidence."""
    if (
        not isinstance(entry, dict)
        or not isinstance(entry.get("name"), str)
        or type(entry.get("size")) is not int
        or not isinstance(entry.get("sha256"), str)
    ):
        return "the outcome report is malformed"
    name = entry["name"]
    if junit_dir is None or "/" in name or name in (".", ".."):
        return f"the outcome report names an impossible JUnit file {name[:80]!r}"
    data = _read_bounded(junit_dir / name, MAX_JUNIT_FILE_BYTES)
    if data is None or len(data) != entry["size"] or hashlib.sha256(data).hexdigest() != entry["sha256"]:
        return f"the JUnit file {name!r} changed after the judge runner attested it"
    try:
        return parse_junit(data)
    except JUnitError as exc:
        return f"the JUnit file {name!r} is no test report: {exc}"
