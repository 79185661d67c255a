"""Interpreters a task names (``runtimes: {node: 22.23.5, python: "3.12"}``), provisioned into the cache.

By default the sandbox sees the host's ``/usr`` (read-only): ``/usr/bin/python3`` with its Debian
packages and whatever ``node`` is installed there. A task whose tests need another interpreter
names it, and binding provisions it once into ``<cache>/runtimes/``:

- **node** ``X.Y.Z``: the npm registry's ``node-linux-<arch>`` package of that version (the
  official binary, integrity-checked by npm), unpacked and mounted read-only at ``/opt/wfbench/node``;
- **go** ``X.Y``: Debian's ``golang-X.Y-go`` and ``-src`` packages (``apt-get download``,
  unpacked, never installed), mounted read-only at ``/opt/wfbench/go`` (``runtimes.debian``);
- **rust** ``X.Y`` / **java** ``N``: Debian's rustc and cargo, or its OpenJDK ``N`` with maven and
  the packaged Maven repository, the same way (``/opt/wfbench/rust``, ``/opt/wfbench/java``);
- **python** ``X.Y`` or ``X.Y.Z``: an interpreter of that version on this machine (pyenv, uv's
  managed Pythons, ``/usr/bin/pythonX.Y``, ``/usr/local/bin``), its installation copied without
  its ``site-packages`` (test dependencies come from a ``sandbox_dependencies`` tree, built for
  it with ``tasks deps python --python X.Y``) and mounted read-only at the path it was built for
  (CPython installations name their own prefix, e.g. in their library's rpath). An interpreter
  already under ``/usr`` is used in place.

Each provisioned runtime has a digest of its whole tree (taken once, when provisioned, and kept
beside it), recorded in the task binding (so in ``task_binding_digest``), the expected-tests lock
and every row (``task_runtimes``). Inside the sandbox ``/opt/wfbench/bin``, first on ``PATH``
after the CLI, links ``node`` / ``python3`` / ``python`` / ``pythonX.Y`` to them.

Layer: mechanisms (process, digests); no task or sandbox types. Callers: ``taskspec.spec``
(binding), ``taskspec.mounts``, ``tasks.deps``.
"""

from __future__ import annotations

from pathlib import Path

from ._store import (
    BIN_DIR,
    KNOWN,
    Provisioned,
    RuntimeProvisionError,
    bin_dir,
    version_problem,
)
from .debian import TOOLCHAINS, provision_debian
from .node import provision_node
from .python import find_python, provision_python

__all__ = [
    "BIN_DIR",
    "KNOWN",
    "Provisioned",
    "RuntimeProvisionError",
    "bin_dir",
    "find_python",
    "provision",
    "provision_debian",
    "provision_node",
    "provision_python",
    "version_problem",
]


def provision(name: str, version: str, *, cache: Path) -> Provisioned:
    """The runtime ``name`` at ``version``, provisioned into ``cache`` if it is not there yet."""
    if name == "node":
        return provision_node(version, cache=cache)
    if name == "python":
        return provision_python(version, cache=cache)
    if name in TOOLCHAINS:
        return provision_debian(name, version, cache=cache)
    raise RuntimeProvisionError(f"unknown runtime {name!r}; known: {', '.join(KNOWN)}")
