"""Harness-owned unittest entry point that speaks the outcome-report protocol.

``python3 -I -B "$WORKFLOW_BENCH_UNITTEST" TARGET...`` where each TARGET is a dotted module name
(resolved against the working directory, like ``python -m unittest``) or a ``.py`` path. Runs
the tests with the ordinary text runner on stderr and writes one line per test to the result
pipe named by ``WORKFLOW_BENCH_RESULT_FD`` (see judge_runner.py), then ``{"done": true}`` only
if the run completed. Exit status: 0 iff every test passed and at least one ran.
"""

import importlib.util
import json
import os
import sys
import unittest


def main(argv: list[str]) -> int:
    channel = os.fdopen(int(os.environ.pop("WORKFLOW_BENCH_RESULT_FD")), "w", buffering=1)
    # Appended, never prepended: code under test must not shadow the standard library here.
    sys.path.append(os.getcwd())
    loader = unittest.defaultTestLoader
    suite = unittest.TestSuite()
    for index, target in enumerate(argv):
        if target.endswith(".py"):
            suite.addTests(loader.loadTestsFromModule(_load_path(target, index)))
        else:
            suite.addTests(loader.loadTestsFromName(target))
    result = unittest.TextTestRunner(stream=sys.stderr, resultclass=_reporting(channel)).run(suite)
    channel.write(json.dumps({"done": True}) + "\n")
    channel.flush()
    return 0 if result.wasSuccessful() and result.testsRun > 0 else 1


def _load_path(path: str, index: int):
    name = f"wfbench_target_{index}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _reporting(channel):
    class ReportingResult(unittest.TextTestResult):
        _wfbench_outcome: str | None

        def startTest(self, test):
            super().startTest(test)
            self._wfbench_outcome = "passed"

        def _mark(self, outcome):
            if getattr(self, "_wfbench_outcome", None) in (None, "passed", "skipped"):
                self._wfbench_outcome = outcome

        def addError(self, test, err):
            super().addError(test, err)
            if not hasattr(self, "_wfbench_outcome") or self._wfbench_outcome is None:
                # setUpClass/module errors arrive without startTest: report them directly.
                _emit(channel, test.id(), "error")
            else:
                self._mark("error")

        def addFailure(self, test, err):
            super().addFailure(test, err)
            self._mark("failed")

        def addSubTest(self, test, subtest, err):
            super().addSubTest(test, subtest, err)
            if err is not None:
                self._mark("failed")

        def addUnexpectedSuccess(self, test):
            super().addUnexpectedSuccess(test)
            self._mark("failed")

        def addSkip(self, test, reason):
            super().addSkip(test, reason)
            self._wfbench_outcome = "skipped"

        def addExpectedFailure(self, test, err):
            super().addExpectedFailure(test, err)
            self._wfbench_outcome = "skipped"

        def stopTest(self, test):
            super().stopTest(test)
            _emit(channel, test.id(), self._wfbench_outcome)
            self._wfbench_outcome = None

    return ReportingResult


def _emit(channel, test_id: str, outcome: str | None) -> None:
    channel.write(json.dumps({"test": test_id, "outcome": outcome}) + "\n")
    channel.flush()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
