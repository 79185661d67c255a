"""Every git command the harness runs, with one hardened configuration: host and sandbox alike.

Owns ``HARDENED_CONFIG`` (the ``-c`` options every invocation carries), ``git_argv`` (the argv of
one command), ``git_env`` (the host environment of one command) and the runners built on them:
``run_git`` (a harness step that must succeed), ``query_git`` (a read-only query whose failure is
an answer) and ``sandbox_git`` (git inside a cell's sandbox, where the clone is untrusted).

Why one module: the same hardening used to be spelled four times (template building, the patch
view, task repositories, the demo corpus builder) and had drifted, only one of them disabling
``core.attributesFile``. A repository's own config, a caller's ``GIT_*`` variables and the
machine's system and global config must not run programs (fsmonitor, hooks, pagers, external
diffs), redirect a query (``GIT_DIR``, ``GIT_WORK_TREE``, ``GIT_OBJECT_DIRECTORY``), swap objects
(replace refs) or change what diff and add report (attributes, path quoting).

Trust: host-side git runs only on repositories the harness created, or on the task's repository
before any sandboxed process existed; once setup or the agent has run, a clone's ``.git`` is
untrusted and every git command on it runs inside the sandbox (``sandbox_git``).

Must never: inherit ``GIT_*`` from the caller, read a system or global git config, or prompt.
Callers: ``workspace.clone``, ``workspace.patch``, ``taskspec.repos``, ``corpus.build_target``,
``tasks.check`` (the reference patch, in the sandbox), ``cells.run`` (the candidate overlay
commit, in the sandbox). ``tests/unit/test_git_hardening.py`` fails when any other module spells
a git argv.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path

from workflow_bench.process import ProcessError, ProcessResult, run_checked, run_process
from workflow_bench.sandbox import RunPolicy, Sandbox

HARDENED_CONFIG: tuple[tuple[str, str], ...] = (
    ("core.fsmonitor", "false"),  # a planted fsmonitor hook runs on every status-like command
    ("core.hooksPath", "/dev/null"),  # no hook of the repository's runs (commit, checkout, …)
    ("core.attributesFile", "/dev/null"),  # no global attributes file (textconv, filters, diff drivers)
    ("diff.external", ""),  # no external diff program
    ("core.pager", "cat"),  # no pager program
    ("core.quotePath", "true"),  # unusual path bytes come back quoted, as the parsers expect
    # No automatic housekeeping in any repository the harness touches: a detached `gc --auto`
    # that a harness `git commit` left behind in a template with > 6,700 loose objects deleted
    # object directories while cells copied them (issue 26). Nothing of ours needs it.
    ("gc.auto", "0"),
    ("maintenance.auto", "false"),
)
# A fixed step (init, rev-parse, a small diff): two minutes means a hung filesystem or a lock,
# not work. Steps whose work grows with the repository take ``scaled_timeout`` instead.
GIT_TIMEOUT_S = 120
# The slowest rate a loaded 2-core machine was measured to sustain for a harness git step that
# reads or writes a whole tree (fast-import, pack-objects, checkout-index): ~8 MB/s and ~2,000
# entries/s under load. A bound at a quarter of that still ends a hung step.
_SCALED_BYTES_PER_S = 2 * 1024 * 1024
_SCALED_ENTRIES_PER_S = 500
MAX_OUTPUT_BYTES = 8 * 1024 * 1024  # process.run_process's default capture
# Where a variable of the host environment is kept: the rest, every GIT_* among them, is dropped.
_KEPT_HOST_VARIABLES = ("PATH",)
_FIXED_ENV = {
    "GIT_CONFIG_NOSYSTEM": "1",  # no /etc/gitconfig
    "GIT_CONFIG_GLOBAL": "/dev/null",  # no ~/.gitconfig or $XDG_CONFIG_HOME/git/config
    "GIT_ATTR_NOSYSTEM": "1",  # no /etc/gitattributes
    "GIT_NO_REPLACE_OBJECTS": "1",  # a SHA always names the object it hashes to
    "GIT_TERMINAL_PROMPT": "0",  # never wait on a credential prompt
    "HOME": "/nonexistent",
    "LC_ALL": "C",
}
# A fixed identity and date make a harness commit a pure function of its tree: two sweeps over
# the same task SHA get the same sanitized SHA.
SNAPSHOT_IDENTITY = {
    "GIT_AUTHOR_NAME": "workflow-bench",
    "GIT_AUTHOR_EMAIL": "snapshot@workflow-bench.invalid",
    "GIT_COMMITTER_NAME": "workflow-bench",
    "GIT_COMMITTER_EMAIL": "snapshot@workflow-bench.invalid",
    "GIT_AUTHOR_DATE": "2000-01-01T00:00:00+0000",
    "GIT_COMMITTER_DATE": "2000-01-01T00:00:00+0000",
}


def scaled_timeout(*, total_bytes: int = 0, entries: int = 0) -> float:
    """The time bound of a git step over ``total_bytes`` in ``entries`` paths: ``GIT_TIMEOUT_S`` plus the
    work at a quarter of the slowest rate measured (never the fixed two minutes a 1 GiB tree cannot meet)."""
    return GIT_TIMEOUT_S + total_bytes / _SCALED_BYTES_PER_S + entries / _SCALED_ENTRIES_PER_S


def git_argv(*args: str | os.PathLike[str]) -> list[str]:
    """``git``, every hardened ``-c`` option, then ``args``."""
    options = [part for key, value in HARDENED_CONFIG for part in ("-c", f"{key}={value}")]
    return ["git", *options, *(str(a) for a in args)]


def git_env(
    extra: Mapping[str, str] | None = None, *, host: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The environment of one host-side git command: ``PATH`` of ``host``, the fixed variables, ``extra``.

    ``extra`` may only add ``GIT_*`` variables the harness chose (an identity, an index file);
    ``host`` defaults to ``os.environ``.
    """
    source = os.environ if host is None else host
    env = {name: source[name] for name in _KEPT_HOST_VARIABLES if name in source}
    env.setdefault("PATH", "/usr/bin:/bin")
    env.update(_FIXED_ENV)
    env.update(extra or {})
    return env


def run_git(
    args: Iterable[str | os.PathLike[str]],
    *,
    what: str,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    stdin: bytes | Path | None = None,
    timeout_s: float = GIT_TIMEOUT_S,
    max_stdout_bytes: int = MAX_OUTPUT_BYTES,
) -> ProcessResult:
    """A harness git step that must succeed; ``ProcessError`` naming ``what`` otherwise.

    ``env`` adds to ``git_env`` (an identity, an index file), never replaces it. Output past
    ``max_stdout_bytes`` is cut (``stdout_overflow``): a caller that must not undercount checks it.
    """
    return run_checked(
        git_argv(*args),
        what=what,
        cwd=cwd,
        env=git_env(env),
        stdin=stdin,
        timeout_s=timeout_s,
        max_stdout_bytes=max_stdout_bytes,
    )


def git_output(
    args: Iterable[str | os.PathLike[str]],
    *,
    what: str,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    timeout_s: float = GIT_TIMEOUT_S,
) -> str:
    """``run_git``'s stdout, decoded and stripped."""
    return run_git(args, what=what, cwd=cwd, env=env, timeout_s=timeout_s).stdout.decode().strip()


def query_git(
    args: Iterable[str | os.PathLike[str]],
    *,
    cwd: Path,
    timeout_s: float = GIT_TIMEOUT_S,
    max_stdout_bytes: int = MAX_OUTPUT_BYTES,
) -> tuple[bool, str]:
    """(succeeded, its stdout; or git's complaint) for a query whose failure is an answer."""
    result = run_process(
        git_argv(*args), timeout_s=timeout_s, cwd=cwd, env=git_env(), max_stdout_bytes=max_stdout_bytes
    )
    if result.ok:
        return True, result.stdout.decode("utf-8", "replace").strip()
    return False, (result.stderr_tail.strip() or result.describe())


def git_result(
    args: Iterable[str | os.PathLike[str]], *, max_stdout_bytes: int, timeout_s: float = GIT_TIMEOUT_S
) -> ProcessResult:
    """A host git command whose result the caller judges (exit, ``stdout_overflow``); never raises."""
    return run_process(git_argv(*args), env=git_env(), timeout_s=timeout_s, max_stdout_bytes=max_stdout_bytes)


def sandbox_git(sandbox: Sandbox, args: Iterable[str], *, what: str, writable: bool = False) -> bytes:
    """git inside the cell's sandbox (the clone is untrusted by now): stdout, or an error naming ``what``."""
    result = sandbox.run(
        git_argv(*args),
        policy=RunPolicy(workspace_writable=writable),
        timeout_s=GIT_TIMEOUT_S,
    )
    if not result.ok:
        raise ProcessError(what, result)
    if result.stdout_overflow:
        raise RuntimeError(f"{what}: output exceeded the capture limit")
    return result.stdout


def head_sha(sandbox: Sandbox) -> str:
    return sandbox_git(sandbox, ["rev-parse", "HEAD"], what="rev-parse HEAD").decode().strip()
