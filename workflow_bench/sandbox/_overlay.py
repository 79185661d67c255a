"""A cell's clone as an overlay on its template: the same cost per cell whatever the repository's size.

Owns ``mount_overlay_clone`` and ``overlay_available``. A copy of the template (``cp -a``) costs
O(files + bytes) per cell: on a 2-core machine 0.7 s for Django (6,811 files), 2.7 s for 50,000
files or 1 GB (issue 26), most of a cell's harness overhead. An overlay costs a few milliseconds:

- **lower**: the sealed template itself, read-only, through an *idmapped* bind mount
  (``open_tree`` + ``mount_setattr(MOUNT_ATTR_IDMAP)``) whose user namespace maps on-disk uid/gid 0
  (the harness built the template as root) to the cell's host uid: the agent sees every file as its
  own, as after the copy's ``chown``, and the template on disk is never written (the mount is
  read-only, and the overlay writes only its upper layer);
- **upper** and **work**: directories on the cell's own volume (``CellResources``), so what the
  agent writes (new files, and each lower file it changes, copied up whole) is bounded by
  ``--cell-disk-mib`` and disappears with the volume;
- ``redirect_dir=on`` (renaming a directory of the template works, as on a copy), ``index=off``
  and ``metacopy=off`` (a copy-up copies data and metadata: no layer keeps a reference the agent
  could steer), ``xino=auto`` (inode numbers stay unique across the layers).

The bind of the template is unmounted as soon as the overlay holds its own private clone of it, so
a cell has one mount more than before (its workspace), removed first at teardown. Needs root (the
mounts) and a kernel with idmapped overlay layers (Linux 5.19+).

**A non-root runner** (issue 33) mounts its overlays in its own user and mount namespaces
(``_mountns``, entered by the front door), with no idmap: it built the template itself, as the
uid its cells run as. Such a mount must use ``userxattr`` (its ``user.overlay.*`` attributes: a
user namespace cannot write ``trusted.*``), and the kernel refuses ``redirect_dir`` with it, so
renaming a *template* directory is EXDEV there: ``mv`` copies and deletes instead, ``git mv`` of
such a directory fails, files and new directories rename as on a copy. The row says which clone
a cell had (``clone_kind``, ``clone_reason``).

``clone_support`` probes once per process on a scratch tree in the first cell's directory and
says which clone the cells get and why; where the host refuses, cells copy the template as before.

Callers: ``_limits.CellResources`` (``clone_support``, ``mount_clone``), tests.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from workflow_bench.process import ProcessError, run_checked

from ._mountns import private_mounts_refusal
from ._mounts import unmount
from ._userns import IdmapNamespace, UserNamespaceError

_SYS_OPEN_TREE, _SYS_MOVE_MOUNT, _SYS_MOUNT_SETATTR = 428, 429, 442  # x86_64 and aarch64 alike
_AT_FDCWD = -100
_OPEN_TREE_CLONE = 1
_AT_EMPTY_PATH, _AT_RECURSIVE = 0x1000, 0x8000
_MOVE_MOUNT_F_EMPTY_PATH = 0x4
_MOUNT_ATTR_RDONLY, _MOUNT_ATTR_NOSUID, _MOUNT_ATTR_NODEV = 0x1, 0x2, 0x4
_MOUNT_ATTR_IDMAP = 0x100000
OVERLAY_OPTIONS = "redirect_dir=on,index=off,metacopy=off,xino=auto"
# A user namespace's overlay: user.overlay.* attributes; redirect_dir stays off (the kernel's rule).
USERNS_OVERLAY_OPTIONS = "userxattr,index=off,metacopy=off,xino=auto"
_MS_NOSUID, _MS_NODEV = 0x2, 0x4
LAYERS_DIR = ".layers"
"""Under the cell directory (its volume): ``upper``, ``work`` and, while mounting, ``lower``."""


class OverlayError(RuntimeError):
    """The overlay clone could not be mounted (a harness fault: the cell never started)."""


class _MountAttr(ctypes.Structure):
    _fields_ = [
        ("attr_set", ctypes.c_uint64),
        ("attr_clr", ctypes.c_uint64),
        ("propagation", ctypes.c_uint64),
        ("userns_fd", ctypes.c_uint64),
    ]


@functools.cache
def _libc() -> ctypes.CDLL:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    return libc


def _check(result: int, what: str) -> int:
    if result < 0:
        code = ctypes.get_errno()
        raise OverlayError(f"{what}: {os.strerror(code)}")
    return result


def _bind_idmapped(source: Path, target: Path, userns_path: str) -> None:
    """A read-only bind of ``source`` on ``target`` whose ids go through ``userns_path``'s map."""
    libc = _libc()
    tree = _check(
        libc.syscall(
            _SYS_OPEN_TREE, _AT_FDCWD, os.fsencode(source), _OPEN_TREE_CLONE | os.O_CLOEXEC | _AT_RECURSIVE
        ),
        f"open_tree {source}",
    )
    try:
        userns = os.open(userns_path, os.O_RDONLY | os.O_CLOEXEC)
        try:
            flags = _MOUNT_ATTR_IDMAP | _MOUNT_ATTR_RDONLY | _MOUNT_ATTR_NOSUID | _MOUNT_ATTR_NODEV
            attr = _MountAttr(flags, 0, 0, userns)
            size = ctypes.sizeof(attr)
            _check(
                libc.syscall(_SYS_MOUNT_SETATTR, tree, b"", _AT_EMPTY_PATH, ctypes.byref(attr), size),
                "mount_setattr (idmap)",
            )
        finally:
            os.close(userns)
        moved = libc.syscall(
            _SYS_MOVE_MOUNT, tree, b"", _AT_FDCWD, os.fsencode(target), _MOVE_MOUNT_F_EMPTY_PATH
        )
        _check(moved, f"move_mount to {target}")
    finally:
        os.close(tree)


def mount_overlay_clone(template: Path, dest: Path, *, layers: Path, host_uid: int) -> None:
    """Mount ``dest`` as an overlay of ``template`` (owned by ``host_uid`` through the idmap) with
    its upper and work directories under ``layers``; ``OverlayError`` when it cannot.

    ``dest`` must not exist; ``layers`` is created (on the cell's volume). A non-root caller
    mounts in its own namespaces (``_mountns``) without an idmap: ``host_uid`` is then its own.
    """
    if os.geteuid() != 0:
        _mount_userns_overlay(template, dest, layers=layers)
        return
    lower, upper, work = layers / "lower", layers / "upper", layers / "work"
    for directory in (lower, upper, work):
        directory.mkdir(parents=True)
    os.chown(upper, host_uid, host_uid)  # the merged root is the upper's: the cell's, like a copy's
    upper.chmod(template.stat().st_mode & 0o7777)
    dest.mkdir()
    idmap = IdmapNamespace(host_uid)
    try:
        idmap.open()
        _bind_idmapped(template, lower, idmap.path)
    except UserNamespaceError as exc:
        raise OverlayError(f"the idmap of the template: {exc}") from None
    finally:
        idmap.close()  # the mount holds its own reference to the namespace
    try:
        options = f"nosuid,nodev,lowerdir={lower},upperdir={upper},workdir={work},{OVERLAY_OPTIONS}"
        mount = ["mount", "-t", "overlay", "-o", options, "overlay", str(dest)]
        run_checked(mount, what="mount the overlay clone", timeout_s=60)
    except ProcessError as exc:
        raise OverlayError(str(exc)) from None
    finally:
        # The overlay keeps a private clone of its lower layer: the bind is not needed any more.
        done = unmount(lower, what="the template's idmapped bind", retry_s=1.0)
        if done.problem is None:
            with contextlib.suppress(OSError):
                lower.rmdir()


def _mount_userns_overlay(template: Path, dest: Path, *, layers: Path) -> None:
    """The non-root overlay: the template itself as the lower layer, mounted by ``mount(2)`` (this
    process holds the capability in its own namespace; a ``mount`` binary would not, after exec)."""
    refusal = private_mounts_refusal()
    if refusal is not None:
        raise OverlayError(f"no private mount namespace: {refusal}")
    upper, work = layers / "upper", layers / "work"
    for directory in (upper, work):
        directory.mkdir(parents=True)
    upper.chmod(template.stat().st_mode & 0o7777)
    dest.mkdir()
    options = f"lowerdir={template},upperdir={upper},workdir={work},{USERNS_OVERLAY_OPTIONS}"
    flags = _MS_NOSUID | _MS_NODEV
    if _libc().mount(b"overlay", os.fsencode(dest), b"overlay", flags, os.fsencode(options)) != 0:
        raise OverlayError(f"mount the overlay clone on {dest}: {os.strerror(ctypes.get_errno())}")


@dataclass(frozen=True, slots=True)
class CloneSupport:
    """Which clone this runner's cells get (``overlay`` or ``copy``) and why: the row's
    ``clone_kind`` and ``clone_reason``, printed once per sweep."""

    kind: str
    reason: str


_probed: dict[str, CloneSupport] = {}


def clone_support(scratch: Path, *, can_mount_volume: bool) -> CloneSupport:
    """Whether this process can mount an overlay clone, and why (not): probed once, in a directory
    made under ``scratch`` (a cell's own, so a runner killed mid-probe leaves its mounts where the
    stale-cell cleanup finds them) and removed again. ``can_mount_volume``: root with loop devices
    (a root runner's overlay's upper layer lives on the cell's volume)."""
    if "support" in _probed:
        return _probed["support"]
    root = os.geteuid() == 0
    if root and not can_mount_volume:
        found = CloneSupport("copy", "root without loop devices (/dev/loop-control): no cell volume")
    elif root and shutil.which("mount") is None:
        found = CloneSupport("copy", "root without a mount binary")
    elif not root and (refusal := private_mounts_refusal()) is not None:
        found = CloneSupport("copy", f"non-root, no private mount namespace: {refusal}")
    else:
        problem = _probe(scratch)
        if problem is not None:
            found = CloneSupport("copy", f"the host refused an overlay: {problem}")
        elif root:
            found = CloneSupport("overlay", "root: an idmapped overlay of the template")
        else:
            found = CloneSupport(
                "overlay",
                "non-root: an overlay in the runner's user namespace (userxattr; renaming a "
                "template directory is EXDEV)",
            )
    _probed["support"] = found
    return found


def _probe(scratch: Path) -> str | None:
    probe = Path(tempfile.mkdtemp(prefix=".overlay-probe-", dir=scratch))
    uid = 65534 if os.geteuid() == 0 else os.geteuid()
    try:
        template = probe / "template"
        template.mkdir()
        (template / "probe").write_text("probe\n")
        dest = probe / "clone"
        try:
            mount_overlay_clone(template, dest, layers=probe / "layers", host_uid=uid)
        except (OverlayError, OSError) as exc:
            return str(exc)
        try:
            owner = (dest / "probe").stat().st_uid
            (dest / "probe").write_text("written\n")  # a copy-up: the upper layer takes writes
            if owner != uid:
                return f"the clone's files are owned by uid {owner}, not {uid}"
            if (template / "probe").read_text() != "probe\n":
                return "a write through the clone reached the template"
        except OSError as exc:
            return f"a write through the clone: {exc}"
        finally:
            unmount(dest, what="the overlay probe")
        return None
    finally:
        with contextlib.suppress(OSError):
            (probe / "layers" / "work" / "work").chmod(0o700)  # the kernel leaves it mode 000
        shutil.rmtree(probe, ignore_errors=True)


def overlay_available(scratch: Path) -> bool:
    """Whether this process can mount an overlay clone (``clone_support``'s kind is ``overlay``)."""
    can_mount = os.geteuid() != 0 or Path("/dev/loop-control").exists()
    return clone_support(scratch, can_mount_volume=can_mount).kind == "overlay"
