// The result-line channel for the kit's JavaScript reporters (vitest, jest); see judge_runner.py.
//
// Opens the judge runner's FIFO by its path (WORKFLOW_BENCH_RESULT_PIPE), which reaches the
// runner through wrappers (npx, npm test, make) that re-spawn with only fds 0-2 and so lose
// fd 9: writing to a stale fd 9 there hits one of node's own descriptors (EINVAL). One JSON
// object per line, written synchronously so a run that is killed has already reported what ran.
//
// The reporter claims the channel when it starts, before any test file loads: the runner's decoy
// FIFO (<path>.decoy, group-writable) is renamed onto the path, so code under test that writes
// result lines there writes into the decoy, which the runner counts (the run is tampered); an
// inherited fd 9 on the channel is closed (node cannot dup2 the decoy onto it). One reporter
// per command reports; a second finds the decoy (its mode says so) and stops without writing.
'use strict';
const fs = require('node:fs');

// Kept from load time (before any test code), so code under test that replaces fs.writeSync or
// JSON.stringify (a jest test in the reporter's process, --runInBand) cannot rewrite the lines;
// the channel object and these functions are frozen.
const { openSync, writeSync, fstatSync, closeSync, renameSync, unlinkSync } = fs;
const { O_WRONLY } = fs.constants;
const { stringify } = JSON;
const bufferFrom = Buffer.from;

const PIPE_VAR = 'WORKFLOW_BENCH_RESULT_PIPE';
const FD_VAR = 'WORKFLOW_BENCH_RESULT_FD';
const DECOY_SUFFIX = '.decoy'; // keep in sync with judge_runner.py and wfbench_result_channel.py
const DECOY_MARK = 0o020; // group write: set on the decoy, never on the channel
const MAX_MESSAGE_CHARS = 500;

function openChannel(who) {
  const path = process.env[PIPE_VAR];
  if (!path) {
    throw new Error(
      `${who}: ${PIPE_VAR} is not set: this reporter reports to the workflow-bench judge runner, ` +
        "which runs verify and the hidden oracle (README, 'Outcome reports')",
    );
  }
  // No O_CREAT: if the FIFO was replaced or removed, fail instead of writing into a plain file.
  let fd;
  try {
    fd = openSync(path, O_WRONLY);
  } catch (error) {
    if (error.code !== 'ENOENT') throw error;
    throw new Error(
      `${who}: ${PIPE_VAR} names no channel: an earlier reporter of this run claimed it ` +
        "(one adapter reports per verify or oracle command; README, 'Sealed outcomes')",
    );
  }
  claim(fd, path, who);
  const write = (event) => {
    const data = bufferFrom(stringify(event) + '\n');
    let offset = 0;
    while (offset < data.length) offset += writeSync(fd, data, offset);
  };
  return Object.freeze({
    test(id, outcome, message) {
      const event = { test: id, outcome };
      if (message && outcome !== 'passed') event.message = String(message).slice(0, MAX_MESSAGE_CHARS);
      write(event);
    },
    done() {
      write({ done: true });
    },
  });
}

function claim(fd, path, who) {
  const mine = fstatSync(fd);
  if (!mine.isFIFO()) throw new Error(`${who}: ${PIPE_VAR} is not the judge runner's pipe`);
  if (mine.mode & DECOY_MARK) {
    closeSync(fd);
    throw new Error(
      `${who}: ${PIPE_VAR} names no channel: an earlier reporter of this run claimed it ` +
        "(one adapter reports per verify or oracle command; README, 'Sealed outcomes')",
    );
  }
  try {
    renameSync(path + DECOY_SUFFIX, path);
  } catch (error) {
    if (error.code !== 'ENOENT') throw error;
    unlinkSync(path); // an older runner: no decoy
  }
  const inherited = Number(process.env[FD_VAR]);
  if (!Number.isInteger(inherited) || inherited === fd) return;
  let other;
  try {
    other = fstatSync(inherited);
  } catch {
    return; // a wrapper closed it already
  }
  if (other.dev === mine.dev && other.ino === mine.ino) closeSync(inherited);
}

Object.freeze(openChannel);
Object.freeze(claim);
module.exports = Object.freeze({ openChannel });
