// Harness-owned jest reporter (jest >= 27): one result line per test, streamed to the judge
// runner as each test finishes (see wfbench_result_channel.cjs and judge_runner.py).
//
//   jest --ci --reporters=default --reporters="$WORKFLOW_BENCH_JEST_REPORTER"
//
// Ids are "<file relative to the jest rootDir> > <describe > test name>". A file that fails to
// run is one "error" test named after the file; {"done": true} follows when the run completed.
// jest (30) calls onTestCaseResult once per attempt of a test under jest.retryTimes: a pass is
// final and streams at once, anything else waits for the file's result, which holds each test's
// last attempt (a test that failed, then passed on retry, passed, as jest itself reports it).
'use strict';
const path = require('node:path');
const { openChannel } = require('./wfbench_result_channel.cjs');

// jest's statuses: "pending" and "todo" are skipped tests; "disabled" too (skipped by config).
const OUTCOMES = { passed: 'passed', failed: 'failed', pending: 'skipped', todo: 'skipped', disabled: 'skipped', skipped: 'skipped' };

class WorkflowBenchReporter {
  constructor(globalConfig) {
    this.rootDir = (globalConfig && globalConfig.rootDir) || process.cwd();
    this.channel = openChannel('workflow-bench jest reporter');
    this.reported = new Set();
  }

  // Streams each test that passed as it finishes (jest calls this only for tests that ran, once
  // per attempt); a failed attempt may be retried, so its test is reported with the file.
  onTestCaseResult(test, result) {
    if (result.status === 'passed') this.report(test.path, result);
  }

  // The file's full list, each test's last attempt: the failed ones, the skipped ones (which never
  // reach onTestCaseResult), and a file that failed to run at all.
  onTestFileResult(test, testResult) {
    for (const result of testResult.testResults || []) this.report(test.path, result);
    if (testResult.testExecError) {
      this.channel.test(this.fileOf(test.path), 'error', testResult.testExecError.message);
    }
  }

  report(file, result) {
    const id = `${this.fileOf(file)} > ${result.fullName}`;
    if (this.reported.has(id)) return;
    this.reported.add(id);
    const outcome = OUTCOMES[result.status] ?? 'error';
    const message = result.failureMessages && result.failureMessages.length ? firstLine(result.failureMessages[0]) : undefined;
    this.channel.test(id, outcome, message);
  }

  onRunComplete() {
    this.channel.done();
  }

  fileOf(file) {
    return path.relative(this.rootDir, file);
  }
}

function firstLine(text) {
  return String(text).split('\n').find((line) => line.trim()) || '';
}

module.exports = WorkflowBenchReporter;
