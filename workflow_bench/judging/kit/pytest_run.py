"""Harness-owned pytest entry point that streams one result line per test to the judge runner.

``python3 -B "$WORKFLOW_BENCH_PYTEST" [pytest arguments...]`` runs ``pytest.main`` exactly as
``python3 -m pytest`` would (the working directory first on ``sys.path``; pytest itself comes
from the task's environment, e.g. ``PYTHONPATH=.wfbench-deps/site-packages``) with one plugin
added: each test's outcome goes to the runner's result channel as soon as the test finishes
(``wfbench_result_channel``; see judge_runner.py), so a run that times out still reports what
ran; ``{"done": true}`` follows when the session finished normally. Nothing is copied into the
repository. Exit status: pytest's.

Outcomes: a test passes only if setup, call and teardown all passed; a failing call is
``failed``; a failing setup or teardown, or a module that cannot be collected, is ``error``
(reported under the collector's node id); a skip or an expected failure (``xfail``) is
``skipped``; an unexpected pass of a strict ``xfail`` is ``failed``.
"""

import os
import sys

_KIT = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, _KIT)
import wfbench_result_channel as results  # noqa: E402

del sys.path[0]
_RANK = {"passed": 0, "skipped": 1, "failed": 2, "error": 2}


class ResultLines:
    """The pytest plugin: per-test outcome lines, streamed."""

    def __init__(self, channel) -> None:
        self.channel = channel
        self.pending: dict[str, list] = {}

    def pytest_collectreport(self, report) -> None:
        if report.failed:
            results.emit(self.channel, report.nodeid or "<collection>", "error", _why(report))

    def pytest_runtest_logreport(self, report) -> None:
        outcome = _outcome(report)
        seen = self.pending.setdefault(report.nodeid, ["passed", None])
        if _RANK[outcome] > _RANK[seen[0]]:
            seen[0], seen[1] = outcome, _why(report)

    def pytest_runtest_logfinish(self, nodeid, location) -> None:
        outcome, message = self.pending.pop(nodeid, ["passed", None])
        results.emit(self.channel, nodeid, outcome, message)

    def pytest_sessionfinish(self, session, exitstatus) -> None:
        for nodeid, (outcome, message) in self.pending.items():  # started, never finished
            results.emit(self.channel, nodeid, "error" if outcome == "passed" else outcome, message)
        # 0 all passed, 1 some failed, 5 none collected: the run itself completed.
        if int(exitstatus) in (0, 1, 5):
            results.done(self.channel)


def _outcome(report) -> str:
    if report.skipped:
        return "skipped"  # pytest.skip, skipif, and xfail that failed as expected
    if report.failed:
        return "failed" if report.when == "call" else "error"
    return "passed"


def _why(report) -> str | None:
    if report.passed:
        return None
    if report.skipped and isinstance(report.longrepr, tuple):
        return str(report.longrepr[2])  # (file, line, "Skipped: reason")
    crash = getattr(report.longrepr, "reprcrash", None)
    if crash is not None:
        return str(crash.message)
    text = str(report.longrepr or "").strip().splitlines()
    return text[-1] if text else None


def main(argv: list[str]) -> int:
    try:
        channel = results.open_channel()
    except results.NoChannel as exc:
        print(f"pytest adapter: {exc}", file=sys.stderr)
        return 2
    sys.path[0] = os.getcwd()  # as `python3 -m pytest` has it; the kit stays off the path
    import pytest

    return int(pytest.main(argv, plugins=[ResultLines(channel)]))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
