"""The judges' parts of a row: the authored verify, the hidden oracle and the clean room.

Each part is one writer's fields (``cells.judges`` from ``judging``; ``cells.cleanroom``), declared
once with its meaning; ``rows.model`` assembles them into ``Row``. Must never: import from cells,
reports or anything above.
"""

from __future__ import annotations

from typing import ClassVar

from .records import JudgedTests, Part, Sealing
from .records import row_field as _f


class VerifyJudgement(Part):
    """The task's authored verify, judged by the harness (``judging.judge.run_verify``)."""

    SECTION: ClassVar[str] = "authored verify"
    authored_tests_passed: bool | None = _f(
        "the task's verify passed (workspace read-only, no network), judged on the judge runner's "
        "nonce-bound outcome report: every expected test (the lock `tasks check` wrote) reported and "
        "passed, else at least verify_min_tests tests all passed; a task declaring neither is judged "
        "by verify's exit status",
        default=None,
    )
    authored_test_output: str | None = _f("tail (≤4000 chars) of the verify output, redacted", default=None)
    verify_output: str | None = _f("alias of authored_test_output (reference compatibility)", default=None)
    verify_detail: str | None = _f(
        "how verify was judged: the verdict with its reasons (which tests failed, were missing or "
        "skipped; counts; exit status), or 'exit status N' when the task declares no verify_min_tests "
        "and has no expected tests",
        default=None,
    )
    verify_tests_run: int | None = _f(
        "distinct tests verify reported; null when nothing reported any test", default=None
    )
    verify_tests_passed: int | None = _f(
        "of those, tests that passed; null as verify_tests_run", default=None
    )
    verify_tests_skipped: int | None = _f(
        "of those, tests reported skipped; null as verify_tests_run", default=None
    )
    verify_tests: JudgedTests | None = _f(
        "{tests: [{id, outcome, message}], omitted}: verify's tests as oracle_tests, with the first "
        "300 characters of each failure's message, redacted; null as verify_tests_run",
        default=None,
    )


class OracleJudgement(Part):
    """The hidden oracle (or the hidden review labels), staged after every model process exited."""

    SECTION: ClassVar[str] = "hidden oracle"
    oracle_passed: bool | None = _f(
        "the hidden oracle proved success: its nonce-bound outcome report, written by the harness's "
        "judge runner outside the workspace, shows every expected test (lock) passed, else at least "
        "oracle.min_tests (default 1) tests run and all passed; the harness's sentinel tests "
        "reported as planned (oracle_sealed); and the command exited 0 (non-zero when a sentinel "
        "failed as planned)",
        default=None,
    )
    oracle_sealed: Sealing = _f(
        "sealed: the harness's per-run sentinel tests, added to the staged oracle test files (two "
        "must fail, one pass, one be skipped; random names), were all reported as planned, so the "
        "results came from running those files unaltered; unsealed: the oracle ran but its results "
        "are not vouched for by sentinels (no oracle file could carry one, the lock records that its "
        "reference runs did not report them, as for a SWE-bench task, or a required one was missing or "
        "reported wrongly: evidence-tampered); unknown: no outcome report was read (the oracle did not "
        "run); schema 8-9 rows' true/false/null read as sealed/unsealed/unknown",
        default="unknown",
    )
    test_config_changed: list[str] | None = _f(
        "test-infrastructure paths (conftest.py, pytest/tox/setup.cfg/pyproject, sitecustomize, "
        "usercustomize, *.pth, vitest/vite/jest/babel configs, package.json, .npmrc, tsconfig) the "
        "agent added, changed or removed, at most 50; the hidden oracle ran with the versions from "
        "before the first session (judging/test_config.py); null when the oracle did not run",
        default=None,
    )
    oracle_output: str | None = _f(
        "'hidden oracle passed: ' / 'hidden oracle failed: ' and the harness's verdict on the outcome "
        "report (counts, or why it is no proof); oracle output is never kept",
        default=None,
    )
    oracle_tests_run: int | None = _f(
        "distinct tests the oracle reported (result lines and JUnit XML merged by normalized id); null "
        "when nothing reported any test or the report was no evidence (never 0 for unknown)",
        default=None,
    )
    oracle_tests_passed: int | None = _f(
        "of those, tests that passed; null as oracle_tests_run", default=None
    )
    oracle_tests_skipped: int | None = _f(
        "of those, tests reported skipped; null as oracle_tests_run", default=None
    )
    oracle_tests: JudgedTests | None = _f(
        "{tests: [{id, outcome, message}], omitted}: the oracle's tests (normalized ids; outcome "
        "passed | failed | error | skipped), failures first, at most 200; message always null (it "
        "may quote the hidden tests); omitted counts the rest; null as oracle_tests_run",
        default=None,
    )


class CleanRoomJudgement(Part):
    """The hidden oracle on a fresh clone of the base with exactly the saved patch applied
    (``cells.cleanroom``), at sweep time and in every regrade."""

    SECTION: ClassVar[str] = "clean room"
    cleanroom_oracle_passed: bool | None = _f(
        "the hidden oracle's verdict (as oracle_passed) on a fresh copy of the task's template, the "
        "task's setup re-run, exactly patch.diff applied (test configuration excluded, every .pyc/.pyo "
        "removed): nothing else of the workspace; it must agree with oracle_passed, else "
        "evidence-tampered; null when no clean room ran (review arms, a cell that failed before "
        "judging, clean room switched off)",
        default=None,
    )
    cleanroom_detail: str | None = _f(
        "the clean room's verdict on the outcome report, the bytecode files it removed and the test "
        "configuration it left at the base's, or why the patch could not be judged there "
        "(a stand-in for a file over the view's caps, a truncated patch, a patch that does not apply)",
        default=None,
    )
