"""Harness-owned unittest entry point that speaks the outcome-report protocol.

``python3 -I -B "$WORKFLOW_BENCH_UNITTEST" TARGET...`` where each TARGET is a dotted module name
(resolved against the working directory, like ``python -m unittest``) or a ``.py`` path. Runs
the tests with the ordinary text runner on stderr and writes one line per test to the judge
runner's result channel (``wfbench_result_channel``; see judge_runner.py), then ``{"done": true}``
only if the run completed. Works behind wrappers (``make``, ``sh -c``) that close fd 9. Exit
status: 0 iff every test passed and at least one ran.

Before any test module loads, a guard (``wfbench_framework_guard``) snapshots unittest's classes
and functions, the builtins, this shim's result class and its channel; after every test and at
the end it reports what changed as ``{"tampered": …}`` lines (a patched ``TestCase.run``, a
result method replaced, a test's code swapped for a no-op after it was loaded).
"""

import importlib.util
import os
import sys
import traceback
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import wfbench_framework_guard as framework_guard
import wfbench_result_channel as results

del sys.path[0]


def main(argv: list[str]) -> int:
    try:
        channel = results.open_channel()
    except results.NoChannel as exc:
        print(f"unittest shim: {exc}", file=sys.stderr)
        return 2
    result_class = _reporting(channel)
    guard = framework_guard.Guard(
        ("unittest", results.__name__, framework_guard.__name__),
        extra=(("the shim's result class", result_class), ("the result channel's stream", channel)),
    )
    result_class.guard = guard
    # Appended, never prepended: code under test must not shadow the standard library here.
    sys.path.append(os.getcwd())
    loader = unittest.defaultTestLoader
    suite, unloadable = unittest.TestSuite(), 0
    for index, target in enumerate(argv):
        if target.endswith(".py"):
            try:
                module = _load_path(target, index)
            except Exception as exc:  # a file that cannot even import is one errored "test", named
                traceback.print_exc()
                results.emit(channel, target, "error", _why((type(exc), exc, None)))
                unloadable += 1
                continue
            suite.addTests(loader.loadTestsFromModule(module))
        else:
            suite.addTests(loader.loadTestsFromName(target))
    for test in _tests(suite):
        name = getattr(test, "_testMethodName", "")
        if isinstance(test, unittest.TestCase) and hasattr(type(test), name):
            guard.watch_test(
                test, getattr(type(test), name), lambda t=test, n=name: getattr(type(t), n, None)
            )
    result = unittest.TextTestRunner(stream=sys.stderr, resultclass=result_class).run(suite)
    result_class.check(None)
    results.done(channel)
    return 0 if result.wasSuccessful() and result.testsRun > 0 and not unloadable else 1


def _load_path(path: str, index: int):
    name = f"wfbench_target_{index}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _tests(suite):
    for item in suite:
        if isinstance(item, unittest.TestSuite):
            yield from _tests(item)
        else:
            yield item


def _reporting(channel):
    reported: set[str] = set()

    class ReportingResult(unittest.TextTestResult):
        _wfbench_outcome: str | None
        guard = None

        @classmethod
        def check(cls, test):
            findings: list[str] = cls.guard.changed(test) if cls.guard is not None else []
            for finding in findings:
                if finding not in reported:
                    reported.add(finding)
                    results.tampered(channel, finding)

        def startTest(self, test):
            super().startTest(test)
            self._wfbench_outcome = "passed"

        def _mark(self, outcome, err=None):
            if getattr(self, "_wfbench_outcome", None) in (None, "passed", "skipped"):
                self._wfbench_outcome = outcome
                self._wfbench_message = _why(err)

        def addError(self, test, err):
            super().addError(test, err)
            if not hasattr(self, "_wfbench_outcome") or self._wfbench_outcome is None:
                # setUpClass/module errors arrive without startTest: report them directly.
                results.emit(channel, test.id(), "error", _why(err))
            else:
                self._mark("error", err)

        def addFailure(self, test, err):
            super().addFailure(test, err)
            self._mark("failed", err)

        def addSubTest(self, test, subtest, err):
            super().addSubTest(test, subtest, err)
            if err is not None:
                self._mark("failed", err)

        def addUnexpectedSuccess(self, test):
            super().addUnexpectedSuccess(test)
            self._mark("failed")

        def addSkip(self, test, reason):
            super().addSkip(test, reason)
            self._wfbench_outcome, self._wfbench_message = "skipped", str(reason)

        def addExpectedFailure(self, test, err):
            super().addExpectedFailure(test, err)
            self._wfbench_outcome = "skipped"

        def stopTest(self, test):
            super().stopTest(test)
            results.emit(channel, test.id(), self._wfbench_outcome, getattr(self, "_wfbench_message", None))
            self._wfbench_outcome = self._wfbench_message = None
            type(self).check(test)

    return ReportingResult


def _why(err) -> str | None:
    """The exception's last line ("AssertionError: 1 != 2"), the part a reader needs first."""
    if not err:
        return None
    lines = "".join(traceback.format_exception_only(err[0], err[1])).strip().splitlines()
    return lines[-1] if lines else None


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
