// Harness-owned vitest reporter (vitest >= 3.2; older ones load no reporter from outside the
// project): one result line per test, streamed to the judge runner as each test finishes (see
// wfbench_result_channel.cjs and judge_runner.py).
//
//   vitest run --reporter=default --reporter="$WORKFLOW_BENCH_VITEST_REPORTER"
//
// Ids are "<file relative to the vitest root> > <suite > test name>". A file that fails to load
// is one "error" test named after the file; {"done": true} follows unless the run was interrupted.
// The file is relative on every vitest >= 3.2: 3.2 has no relativeModuleId (only the absolute
// moduleId, which carries the random path of a reference clone or an oracle copy), so the same
// relative path is computed from the project's root, as later versions do.
//
// onInit makes the kit's wfbench_vitest_guard.mjs every project's first setup file and
// wfbench_vitest_ready.mjs its last: the framework guard (wfbench_framework_guard.cjs) then
// watches vitest's API and the builtins in each worker.
import { createRequire } from 'node:module';
import { relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const { openChannel } = createRequire(import.meta.url)('./wfbench_result_channel.cjs');
const OUTCOMES = { passed: 'passed', failed: 'failed', skipped: 'skipped' };
const GUARD_SETUP = fileURLToPath(new URL('./wfbench_vitest_guard.mjs', import.meta.url));
const GUARD_READY = fileURLToPath(new URL('./wfbench_vitest_ready.mjs', import.meta.url));

export default class WorkflowBenchReporter {
  constructor() {
    this.channel = openChannel('workflow-bench vitest reporter');
  }

  onInit(vitest) {
    for (const project of vitest.projects || []) {
      const files = project.config && project.config.setupFiles;
      if (!Array.isArray(files) || files.includes(GUARD_SETUP)) continue;
      files.unshift(GUARD_SETUP); // first: vitest's API before the project's setup files run
      files.push(GUARD_READY); // last: the builtins after them (zone.js patches Promise there)
    }
  }

  onTestCaseResult(testCase) {
    const result = testCase.result();
    const outcome = OUTCOMES[result.state] ?? 'error'; // "pending" after the run: it never finished
    const message = result.errors && result.errors.length ? result.errors[0].message : undefined;
    this.channel.test(`${fileOf(testCase.module)} > ${testCase.fullName}`, outcome, message);
  }

  onTestModuleEnd(testModule) {
    const errors = testModule.errors();
    if (errors.length) this.channel.test(fileOf(testModule), 'error', errors[0].message);
  }

  onTestRunEnd(testModules, unhandledErrors, reason) {
    for (const error of unhandledErrors) this.channel.test('<unhandled error>', 'error', error.message);
    if (reason !== 'interrupted') this.channel.done();
  }
}

function fileOf(testModule) {
  if (testModule.relativeModuleId) return testModule.relativeModuleId;
  const root = testModule.project && testModule.project.config && testModule.project.config.root;
  return root ? relative(root, testModule.moduleId) : testModule.moduleId;
}
