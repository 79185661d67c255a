// Harness-owned vitest setup file, every project's last (the kit's vitest reporter adds it): the
// project's own setup files have run, the test file has not. The framework guard takes the
// builtins (Function.prototype.call, Promise.prototype.then, ...) again here, so a setup file
// that patches them legitimately (zone.js) is not a finding; vitest's own API stays as it was
// before those setup files (wfbench_vitest_guard.mjs).
import { createRequire } from 'node:module';

createRequire(import.meta.url)('./wfbench_framework_guard.cjs').vitestReady();
