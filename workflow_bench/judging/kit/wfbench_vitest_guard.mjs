// Harness-owned vitest setup file: the kit's vitest reporter makes it every project's first
// setup file (onInit), so it runs in each worker before any test file of that worker loads. It
// hands vitest's own exports (globalThis.__vitest_index__, vitest >= 1) to the framework guard
// preloaded into the process (wfbench_framework_guard.cjs), which snapshots them once and checks
// them after every test and at the end of each file.
import { createRequire } from 'node:module';

createRequire(import.meta.url)('./wfbench_framework_guard.cjs').vitest(globalThis.__vitest_index__);
