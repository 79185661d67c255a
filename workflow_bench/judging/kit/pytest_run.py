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

When collection begins (pytest configured: its ``legacypath`` plugin patches pytest's own classes
in ``pytest_configure``; no test module imported yet), a guard (``wfbench_framework_guard``)
snapshots pytest's, pluggy's and unittest's classes and functions, the builtins and this plugin;
after every test and at the end it reports what changed as ``{"tampered": …}`` lines, and so
does a plugin registered after collection began that is not a conftest and implements a hook
that decides or reports outcomes. Workspace code that an initial ``conftest.py`` of the task
imports runs before the snapshot (README, "Sealed outcomes").
"""

import os
import sys
from typing import Any

_KIT = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, _KIT)
import wfbench_framework_guard as framework_guard  # noqa: E402
import wfbench_result_channel as results  # noqa: E402

del sys.path[0]
_RANK = {"passed": 0, "skipped": 1, "failed": 2, "error": 2}
_GUARDED = ("_pytest", "pytest", "pluggy", "unittest", results.__name__, framework_guard.__name__)
# Hooks a plugin could decide or rewrite outcomes with (one registered mid-run is tampering).
_OUTCOME_HOOKS = (
    "pytest_runtest_protocol",
    "pytest_runtest_setup",
    "pytest_runtest_call",
    "pytest_runtest_teardown",
    "pytest_runtest_makereport",
    "pytest_runtest_logreport",
    "pytest_runtest_logfinish",
    "pytest_report_teststatus",
    "pytest_pyfunc_call",
    "pytest_sessionfinish",
    "pytest_collection_modifyitems",
)


class ResultLines:
    """The pytest plugin: per-test outcome lines, streamed."""

    def __init__(self, channel) -> None:
        self.channel = channel
        self.pending: dict[str, list] = {}
        self.guard = None
        self.items: dict[str, object] = {}
        self.plugins: set[int] | None = None
        self.pluginmanager: Any = None
        self.reported: set[str] = set()

    def check(self, item) -> None:
        found: list[str] = self.guard.changed(item) if self.guard is not None else []
        if self.plugins is not None and self.pluginmanager is not None:
            for plugin in self.pluginmanager.get_plugins():
                if id(plugin) in self.plugins or _is_conftest(plugin):
                    continue
                hooks = [h for h in _OUTCOME_HOOKS if hasattr(plugin, h)]
                if hooks:
                    name = self.pluginmanager.get_name(plugin) or type(plugin).__qualname__
                    found.append(f"plugin {name!r} registered while tests were collected or run ({hooks[0]})")
        for finding in found:
            if finding not in self.reported:
                self.reported.add(finding)
                results.tampered(self.channel, finding)

    def pytest_collection(self, session) -> None:
        self.pluginmanager = session.config.pluginmanager
        self.plugins = {id(p) for p in self.pluginmanager.get_plugins()}
        self.guard = framework_guard.Guard(
            _GUARDED,
            extra=(("the pytest adapter", ResultLines), ("the result channel's stream", self.channel)),
        )

    def pytest_collection_finish(self, session) -> None:
        for item in session.items:
            self.items[item.nodeid] = item
            if self.guard is not None:
                self.guard.watch_test(item, getattr(item, "function", None))

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
        self.check(self.items.get(nodeid))

    def pytest_sessionfinish(self, session, exitstatus) -> None:
        for nodeid, (outcome, message) in self.pending.items():  # started, never finished
            results.emit(self.channel, nodeid, "error" if outcome == "passed" else outcome, message)
        self.check(None)
        # 0 all passed, 1 some failed, 5 none collected: the run itself completed.
        if int(exitstatus) in (0, 1, 5):
            results.done(self.channel)


def _is_conftest(plugin) -> bool:
    return os.path.basename(str(getattr(plugin, "__file__", "") or "")) == "conftest.py"


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
