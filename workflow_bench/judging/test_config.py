"""Test infrastructure: the files that configure how tests run, restored to the task's own for the oracle.

A test framework reads configuration the agent can write: a ``conftest.py`` next to the tests, a
``[tool.pytest.ini_options]`` in ``pyproject.toml``, a ``sitecustomize.py`` on ``PYTHONPATH``, a
``setupFiles`` entry in ``vitest.config.ts``, a ``node-options`` line in ``.npmrc``. Any of them
runs code, or changes which tests run, before the hidden oracle's first test. So after verify
(which runs the repository as the agent left it) and before the hidden oracle, every such file the
agent added, changed or removed is put back as it was before the first session: added ones are
deleted, changed and removed ones are rewritten from the harness-owned patch view's ``base``
record. The paths go in the row (``test_config_changed``); the saved patch still shows what the
agent wrote. The environment needs no such step: every judge gets the harness's allowlist
(``sandbox.tool_environment``), so no ``PYTHON*`` or ``NODE_OPTIONS`` the agent chose reaches it,
and HOME and ``/tmp`` are fresh per process (no user site-packages survive a session).

``TEST_CONFIG`` is the table (the registry's ecosystems' ``test_config``; a name matched at any
depth; a ``*`` matches any characters but ``/``); ``changed_test_config`` finds the paths in two
workspace snapshots; ``restore`` rewrites them on the host, every path opened beneath the
workspace without following a symlink (the agent's processes have all exited; a symlink where the
task had a directory is refused, ``TestConfigError``: the cell is ``evidence-tampered``).

Callers: ``cells.run``. Must never: follow a symlink, or write outside the workspace.
"""

from __future__ import annotations

import contextlib
import errno
import fnmatch
import os
import shutil
import stat
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from workflow_bench.frameworks import test_config_patterns

# (pattern, why): every file name that configures a test run or runs code when a test process
# starts, each ecosystem's own (``workflow_bench.frameworks``: declared with its frameworks).
# Matched against each path component, so a package directory named sitecustomize counts.
TEST_CONFIG: tuple[tuple[str, str], ...] = test_config_patterns()
MAX_LISTED = 50  # row field bound; the patch lists them all


class TestConfigError(RuntimeError):
    """The task's test configuration cannot be put back (the agent replaced a directory on its path)."""

    __test__ = False  # not a pytest test class


def is_test_config(path: str) -> bool:
    """Whether ``path`` (workspace-relative) is, or lies inside, a test-infrastructure entry."""
    return any(fnmatch.fnmatchcase(part, pattern) for part in path.split("/") for pattern, _ in TEST_CONFIG)


def changed_test_config(base: Mapping[str, str], after: Mapping[str, str]) -> tuple[str, ...]:
    """The test-infrastructure paths whose kind, mode or bytes differ between two snapshots."""
    keys = set(base) | set(after)
    return tuple(sorted(k for k in keys if base.get(k) != after.get(k) and is_test_config(k)))


def restore(
    workspace: Path,
    paths: Iterable[str],
    *,
    base: Mapping[str, str],
    after: Mapping[str, str],
    read_base: Callable[[str], bytes],
) -> None:
    """Put every one of ``paths`` back as the ``base`` snapshot had it (``after``: the snapshot of
    the workspace now); ``read_base`` gives a base file's bytes or a base symlink's target.
    Removals first, deepest first; then what the base had, shallowest first. Raises
    ``TestConfigError``."""
    todo = sorted(set(paths), key=lambda p: (p.count("/"), p))
    root = os.open(workspace, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        for path in reversed(todo):
            was, now = base.get(path), after.get(path)
            if now is not None and (was is None or _kind(was) != _kind(now) or _kind(now) != "dir"):
                _at(root, path, _remove, create=False)
        for path in todo:
            was = base.get(path)
            if was is not None:
                _at(root, path, _recreate(path, was, read_base), create=True)
    except OSError as exc:
        raise TestConfigError(f"the task's test configuration cannot be restored: {exc}") from exc
    finally:
        os.close(root)


def _recreate(path: str, was: str, read_base: Callable[[str], bytes]) -> Callable[[int, str], None]:
    """The action that makes ``path`` what the base snapshot's entry ``was`` says."""
    kind = _kind(was)
    if kind == "dir":
        mode = int(was.split(":")[1], 8)
        return lambda fd, name: _mkdir(fd, name, mode)
    if kind == "file":
        mode, data = int(was.split(":")[1], 8), read_base(path)
        return lambda fd, name: _write(fd, name, data, mode)
    if kind == "link":
        target = read_base(path)
        return lambda fd, name: os.symlink(target, name, dir_fd=fd)
    raise TestConfigError(f"{path}: the base held a {kind} file, which cannot be restored")


def _kind(entry: str) -> str:
    return entry.split(":", 1)[0]


def _at(root: int, path: str, action: Callable[[int, str], None], *, create: bool) -> None:
    """Run ``action(dir_fd, name)`` in ``path``'s parent, reached without following a symlink
    (missing parents made when ``create``; nothing to do for a removal under a missing parent)."""
    *parents, name = path.split("/")
    fd = os.dup(root)
    try:
        for part in parents:
            try:
                child = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    return
                os.mkdir(part, 0o755, dir_fd=fd)
                child = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise TestConfigError(f"{path}: {part!r} on its way is no longer a directory") from None
                raise
            os.close(fd)
            fd = child
        _writable(fd)
        action(fd, name)
    finally:
        os.close(fd)


def _writable(fd: int) -> None:
    """Give the owner write access to a directory the agent made read-only (the harness owns the clone)."""
    mode = os.fstat(fd).st_mode
    if not mode & stat.S_IWUSR or not mode & stat.S_IXUSR:
        with contextlib.suppress(PermissionError):
            os.fchmod(fd, stat.S_IMODE(mode) | stat.S_IRWXU)


def _remove(fd: int, name: str) -> None:
    try:
        info = os.stat(name, dir_fd=fd, follow_symlinks=False)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(info.st_mode):
        shutil.rmtree(name, dir_fd=fd)  # fd-based: never follows a symlink inside
    else:
        os.unlink(name, dir_fd=fd)


def _mkdir(fd: int, name: str, mode: int) -> None:
    with contextlib.suppress(FileExistsError):
        os.mkdir(name, mode, dir_fd=fd)


def _write(fd: int, name: str, data: bytes, mode: int) -> None:
    _remove(fd, name)
    out = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=fd)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(out, view) :]
        os.fchmod(out, mode)
    finally:
        os.close(out)
