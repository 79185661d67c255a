// Finds the JavaScript test framework changed under the oracle (vitest, jest, node --test): the
// counterpart of wfbench_framework_guard.py. The judge runner preloads this file into every node
// process of a verify or oracle command (NODE_OPTIONS="--require <kit>/wfbench_framework_guard.cjs",
// worker threads included), so it runs before any test file or workspace code in that process.
//
// At load it keeps its own references to what it uses (fs.writeSync, Reflect, Object's
// descriptors, JSON.stringify) and opens the runner's guard FIFO (WORKFLOW_BENCH_GUARD_PIPE):
// code loaded later can replace the globals, not these. It then **snapshots** the property
// descriptors of what a forger patches, and compares them with the live ones after every test
// and at the end; a property replaced or removed is one {"tampered": "<what>"} line on the guard
// pipe (the runner lists it, the harness judges the run evidence-tampered):
//
// - in every process: Function.prototype.call/apply/bind/toString, Promise.prototype.then/catch/
//   finally and Promise's statics, Reflect.apply/construct, Object.is/defineProperty & co. (not
//   JSON: a test may spy on JSON.parse and leave it so; taken again after the project's own setup
//   files, which may patch them as zone.js does);
//   checked at exit, through process.reallyExit too (which skips the 'exit' listeners);
// - node --test (a test file's child, NODE_TEST_CONTEXT set): node:test's exports (test, it,
//   describe, the hooks, mock, ...) and each one's own properties (it.skip, test.todo, ...),
//   node:assert and node:assert/strict; checked when the process exits (a root afterEach of the
//   guard's own would start node:test's reporting in every process that inherits
//   NODE_TEST_CONTEXT, such as a script a test spawns, so there is no per-test check);
// - jest: the test framework (jest-circus/runner) is wrapped when jest loads it. When jest has
//   set the framework up (its 'setup' event, before the project's setupFilesAfterEnv) it
//   snapshots the runtime's globals (test, it, describe, the hooks, expect) and their own
//   properties, the same names on the test environment's global and expect's matchers
//   (expect.extend's registry); just before the test file loads, the environment's own
//   builtins (jest's vm realm). Per test, the function jest calls must be the one the test file
//   registered for it, and a test whose function failed must still carry its errors when it is
//   done (an afterEach hook that clears them makes it pass). Checked at test_done, run_finish
//   and teardown;
// - vitest: the kit's reporter adds wfbench_vitest_guard.mjs as each project's first setup file
//   and wfbench_vitest_ready.mjs as its last; in the worker the first snapshots vitest's exports
//   (test, it, describe, expect, assert, vi, chai, the hooks) and their own properties, chai's
//   Assertion.prototype (expect's matchers) and the same names on globalThis, and registers an
//   afterEach and an afterAll that check; the last takes the builtins again.
//
// Properties added are not findings (expect.extend may add a matcher; a test may add a helper
// to a framework object); settings that are not functions are not watched. This guard, its
// exports and the channel's functions are frozen. What it cannot catch (code aimed at it):
// docs/judging.md, "What a targeted attacker would still have to do". Stdlib only; without
// WORKFLOW_BENCH_GUARD_PIPE (not under the judge runner) it does nothing.
'use strict';

const fs = require('node:fs');
const Module = require('node:module');

const PIPE_VAR = 'WORKFLOW_BENCH_GUARD_PIPE';
const MAX_CHARS = 500;
const { apply, ownKeys } = Reflect;
const { getOwnPropertyDescriptor, freeze, defineProperty } = Object;
const { writeSync, openSync } = fs;
const { stringify } = JSON;
const bufferFrom = Buffer.from;
const StringOf = String;
const symbolFor = Symbol.for;
const setHas = Set.prototype.has;
const setAdd = Set.prototype.add;
const mapGet = WeakMap.prototype.get;
const mapSet = WeakMap.prototype.set;
const mapHas = WeakMap.prototype.has;
const mapDelete = WeakMap.prototype.delete;
const stringSlice = String.prototype.slice;
const regexpTest = RegExp.prototype.test;
const atomicsWait = Atomics.wait;
const pause = new Int32Array(new SharedArrayBuffer(4));

const watched = []; // [label, owner, key, value, get, set, builtin]: the descriptors as loaded
const seen = new WeakMap(); // owner → Set of keys watched (one finding per property, under its first label)
const reported = new Set();
let fd = -1;

function setup() {
  const pipe = process.env[PIPE_VAR];
  if (!pipe) return false;
  try {
    // No O_CREAT: never a plain file instead. Non-blocking: with no reader left (a process
    // started after the runner finished) the open fails at once instead of waiting for ever.
    fd = openSync(pipe, fs.constants.O_WRONLY | fs.constants.O_NONBLOCK);
  } catch {
    return false; // the runner's pipe is gone: nothing to report to
  }
  return true;
}

/** Remember ``owner``'s function and accessor properties (``keys``, or all its own) as now;
 * ``builtin``: a language builtin, taken again by ``rebaseline``. */
function watch(label, owner, keys, builtin = false) {
  if (owner === null || (typeof owner !== 'object' && typeof owner !== 'function')) return;
  const all = keys || ownKeys(owner);
  for (let i = 0; i < all.length; i += 1) {
    const key = all[i];
    const d = getOwnPropertyDescriptor(owner, key);
    if (!d || !(d.get || d.set || typeof d.value === 'function')) continue;
    let keys = apply(mapGet, seen, [owner]);
    if (!keys) apply(mapSet, seen, [owner, (keys = new Set())]);
    if (apply(setHas, keys, [key])) continue;
    apply(setAdd, keys, [key]);
    watched[watched.length] = [label, owner, key, d.value, d.get, d.set, builtin];
  }
}

/** Watch each of ``owner``'s function- or object-valued properties' own properties, one level. */
function watchMembers(label, owner, keys) {
  if (owner === null || (typeof owner !== 'object' && typeof owner !== 'function')) return;
  const all = keys || ownKeys(owner);
  for (let i = 0; i < all.length; i += 1) {
    const d = getOwnPropertyDescriptor(owner, all[i]);
    const value = d && d.value;
    if (value !== null && (typeof value === 'function' || typeof value === 'object')) {
      watch(`${label}${typeof all[i] === 'symbol' ? `[${StringOf(all[i])}]` : all[i]}`, value);
    }
  }
}

/** What differs from the snapshot now: "<label>.<key> replaced|removed". */
function changed() {
  const found = [];
  for (let i = 0; i < watched.length; i += 1) {
    const [label, owner, key, value, get, set] = watched[i];
    const d = getOwnPropertyDescriptor(owner, key);
    if (!d) found[found.length] = `${label}${keyName(key)} removed`;
    else if (d.value !== value || d.get !== get || d.set !== set) {
      found[found.length] = `${label}${keyName(key)} replaced`;
    }
  }
  return found;
}

/** The builtins as they are now: the project's own setup files have run (zone.js replaces
 * Promise.prototype.then there), the test file has not. */
function rebaseline() {
  for (let i = 0; i < watched.length; i += 1) {
    const entry = watched[i];
    const d = entry[6] && getOwnPropertyDescriptor(entry[1], entry[2]);
    if (d) watched[i] = [entry[0], entry[1], entry[2], d.value, d.get, d.set, true];
  }
}

/** Report what changed since the snapshot (each finding once). */
function check(where) {
  const found = changed();
  for (let i = 0; i < found.length; i += 1) report(where ? `${found[i]} (${where})` : found[i], found[i]);
}

/** One ``{"tampered": what}`` line on the guard pipe (``key``: report it once). */
function report(what, key = what) {
  if (apply(setHas, reported, [key])) return;
  apply(setAdd, reported, [key]);
  if (fd < 0) return;
  const line = bufferFrom(`${stringify({ tampered: apply(stringSlice, StringOf(what), [0, MAX_CHARS]) })}\n`);
  for (let attempt = 0; attempt < 500; attempt += 1) {
    try {
      writeSync(fd, line, 0, line.length); // one line is under PIPE_BUF: written whole or not at all
      return;
    } catch (error) {
      if (!error || error.code !== 'EAGAIN') return; // closed under us: nothing to report to
      atomicsWait(pause, 0, 0, 10); // the pipe is full: the runner is reading it
    }
  }
}

function keyName(key) {
  return typeof key === 'symbol' ? `[${StringOf(key)}]` : `.${key}`;
}

// ── every process ────────────────────────────────────────────────────────

function watchBuiltins(label, realm) {
  watch(`${label}Function.prototype`, realm.Function.prototype, ['call', 'apply', 'bind', 'toString'], true);
  watch(`${label}Promise.prototype`, realm.Promise.prototype, ['then', 'catch', 'finally'], true);
  watch(`${label}Promise`, realm.Promise, ['resolve', 'reject', 'all', 'allSettled', 'race', 'any'], true);
  watch(`${label}Reflect`, realm.Reflect, ['apply', 'construct'], true);
  watch(`${label}Object`, realm.Object, [
    'is',
    'defineProperty',
    'defineProperties',
    'getOwnPropertyDescriptor',
    'getPrototypeOf',
    'setPrototypeOf',
    'assign',
    'freeze',
    'keys',
  ], true);
}

// ── node --test: the test file's own process ─────────────────────────────

function guardNodeTest() {
  const nodeTest = require('node:test');
  watch('node:test', nodeTest);
  watchMembers('node:test ', nodeTest);
  watch('node:assert', require('node:assert'));
  watch('node:assert/strict', require('node:assert/strict'));
}

// ── jest: wrap jest-circus's adapter when jest loads it ──────────────────

const JEST_RUNNER = /(?:^jest-circus[\\/]runner|[\\/]jest-circus[\\/](?:runner|build[\\/]runner|build[\\/]legacy-code-todo-rewrite[\\/]jestAdapter))(?:\.js)?$/;
const wrapped = new WeakMap();

function hookJest() {
  const load = Module._load;
  Module._load = function _load(request, parent, isMain) {
    const loaded = apply(load, this, [request, parent, isMain]);
    if (typeof request !== 'string' || !apply(regexpTest, JEST_RUNNER, [request])) return loaded;
    return wrapJestRunner(loaded);
  };
}

function wrapJestRunner(loaded) {
  if (loaded === null || (typeof loaded !== 'object' && typeof loaded !== 'function')) return loaded;
  if (apply(mapHas, wrapped, [loaded])) return apply(mapGet, wrapped, [loaded]);
  let result = loaded;
  if (typeof loaded === 'function') result = guardedAdapter(loaded);
  else if (typeof loaded.default === 'function') {
    result = freeze({ __proto__: null, __esModule: true, default: guardedAdapter(loaded.default) });
  }
  apply(mapSet, wrapped, [loaded, result]);
  return result;
}

function guardedAdapter(adapter) {
  return async function jestAdapter(globalConfig, config, environment, runtime, testPath, ...rest) {
    guardJestFile(environment, runtime, testPath);
    return apply(adapter, this, [globalConfig, config, environment, runtime, testPath, ...rest]);
  };
}

function guardJestFile(environment, runtime, testPath) {
  let runtimeGlobals = null;
  let snapshotted = false;
  const registered = new Set(); // the functions the test file gave test()/it()
  const atStart = new WeakMap(); // test → its function when it started
  const failedAt = new WeakMap(); // test → how many errors it had when its function failed
  const failed = [];
  const prior = environment.handleTestEvent;
  const mark = watched.length; // this file's entries are dropped at its teardown
  // The framework's API when jest has set it up (before the project's setupFilesAfterEnv, which
  // the agent may have edited); the vm realm's builtins just before the test file loads.
  const snapshotFramework = () => {
    const global = environment.global;
    if (runtimeGlobals) {
      const names = ownKeys(runtimeGlobals);
      watchMembers('jest: ', runtimeGlobals, names);
      const onGlobal = [];
      for (let i = 0; i < names.length; i += 1) {
        if (getOwnPropertyDescriptor(global, names[i])) onGlobal[onGlobal.length] = names[i];
      }
      watch("jest: the test environment's global", global, onGlobal);
    }
    const matchers = global[symbolFor('$$jest-matchers-object')];
    if (matchers && matchers.matchers) watch('jest: expect matcher', matchers.matchers);
  };
  const snapshot = () => {
    if (snapshotted) return;
    snapshotted = true;
    const global = environment.global;
    if (global.Function && global.Function !== Function) watchBuiltins("jest: the test environment's ", global);
  };
  const before = (name) =>
    function guardedLoad(from, ...rest) {
      if (from === testPath) snapshot();
      return apply(name, this, [from, ...rest]);
    };
  for (const name of ['requireModule', 'unstable_importModule']) {
    if (typeof runtime[name] === 'function') defineProperty(runtime, name, { value: before(runtime[name]), configurable: true, writable: true });
  }
  environment.handleTestEvent = function handleTestEvent(event, state) {
    onJestEvent(event);
    return prior ? apply(prior, this, [event, state]) : undefined;
  };

  function onJestEvent(event) {
    const name = event && event.name;
    if (name === 'setup') {
      runtimeGlobals = event.runtimeGlobals || null;
      snapshotFramework();
    }
    else if (name === 'add_test' && typeof event.fn === 'function') apply(setAdd, registered, [event.fn]);
    else if (name === 'test_start' && event.test) apply(mapSet, atStart, [event.test, event.test.fn]);
    else if (name === 'test_fn_start' && event.test) {
      const { test } = event;
      const title = testTitle(test);
      if (apply(mapHas, atStart, [test]) && test.fn !== apply(mapGet, atStart, [test])) {
        report(`jest: the function of the test ${title} was replaced after the test started`);
      } else if (typeof test.fn === 'function' && !apply(setHas, registered, [test.fn])) {
        report(`jest: the test ${title} runs a function the test file never registered`);
      }
    } else if (name === 'test_retry' && event.test) {
      apply(mapDelete, failedAt, [event.test]); // jest empties its errors to run it again
    } else if (name === 'test_fn_failure' && event.test) {
      apply(mapSet, failedAt, [event.test, errorCount(event.test)]);
      failed[failed.length] = event.test;
    } else if (name === 'test_done' || name === 'run_finish') {
      const tests = name === 'test_done' ? [event.test] : failed; // the end: every failed test
      for (let i = 0; i < tests.length; i += 1) {
        const test = tests[i];
        if (test && apply(mapHas, failedAt, [test]) && errorCount(test) < apply(mapGet, failedAt, [test])) {
          report(`jest: the errors of the failed test ${testTitle(test)} were cleared before it was reported`);
        }
      }
      check();
    } else if (name === 'teardown') {
      // The last check of this file; its objects are jest's to clean up from here on (jest 30
      // replaces the properties of a finished file's globals: never a finding).
      check();
      watched.length = mark;
    }
  }
}

function errorCount(test) {
  const errors = test.errors;
  return errors && typeof errors.length === 'number' ? errors.length : 0;
}

function testTitle(test) {
  let title = StringOf(test.name);
  for (let block = test.parent; block && block.parent; block = block.parent) title = `${StringOf(block.name)} > ${title}`;
  return stringify(title);
}

// ── vitest: called from wfbench_vitest_guard.mjs, each project's first setup file ──

let vitestWatched = false;

/** Snapshot vitest's API in this worker (once) and check after each test of the file and at its end. */
function guardVitest(index) {
  if (!index || typeof index.afterEach !== 'function') return;
  if (!vitestWatched) {
    vitestWatched = true;
    const names = ownKeys(index);
    const own = [];
    for (let i = 0; i < names.length; i += 1) {
      const value = index[names[i]];
      if (value !== null && (typeof value === 'function' || typeof value === 'object')) {
        watch(`vitest: ${StringOf(names[i])}`, value);
        if (getOwnPropertyDescriptor(globalThis, names[i])) own[own.length] = names[i];
      }
    }
    watch('vitest: the global', globalThis, own);
    const chai = index.chai;
    if (chai && chai.Assertion) watch('vitest: chai.Assertion.prototype', chai.Assertion.prototype);
  }
  index.afterEach(() => check());
  index.afterAll(() => check());
}

const guard = freeze({
  __proto__: null,
  watch,
  watchMembers,
  changed,
  check,
  report,
  vitest: guardVitest,
  vitestReady: rebaseline, // the last setup file: the project's own ones have run
});

if (setup()) {
  watchBuiltins('', globalThis);
  if (process.env.NODE_TEST_CONTEXT) {
    guardNodeTest();
  }
  hookJest();
  process.on('exit', () => check('at exit'));
  // process.reallyExit ends the process without the 'exit' listeners: check there too. Not
  // frozen (signal-exit and others wrap it by assignment); the original is only held here.
  const reallyExit = process.reallyExit;
  if (typeof reallyExit === 'function') {
    process.reallyExit = function guardedReallyExit(code) {
      check('at exit');
      return apply(reallyExit, process, [code]);
    };
  }
}
for (const fn of [setup, watch, watchMembers, changed, check, report, rebaseline, keyName, watchBuiltins, guardNodeTest, hookJest, wrapJestRunner, guardedAdapter, guardJestFile, errorCount, testTitle, guardVitest]) {
  freeze(fn);
}
module.exports = guard;
