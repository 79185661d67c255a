"""A cell's own disk: a loop volume mounted on the cell directory, and the mounts that sit on it.

Owns ``CellVolume``: the volume (a sparse image beside the cell directory, journal-less ext4,
sized ``disk_mib`` plus the clone's size, or ``disk_mib`` alone when the clone is an overlay whose
upper layer is all the volume holds), the cell's devpts instance on it, and the overlay clone
(``_overlay``). ``close`` unmounts them innermost first, each with the busy retries and lazy
detach of ``_mounts.unmount``, then frees the image.

Callers: ``_limits.CellResources`` (which decides whether there is a volume at all: root and loop
devices).
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from workflow_bench.process import ProcessError, run_checked

from ._mounts import unmount
from ._overlay import LAYERS_DIR, mount_overlay_clone

MIB = 1024 * 1024
FULL_MARGIN_BYTES = MIB
"""A volume with less room than this left counts as filled (ext4 keeps a few blocks back)."""
_EXT4_OVERHEAD = 0.05  # metadata of a journal-less ext4, with slack
# No journal (the volume dies with the cell), lazy init (20 ms for any size), an inode per 8 KiB.
_MKFS: tuple[str, ...] = ("mkfs.ext4", "-q", "-F", "-m", "0", "-O", "^has_journal")
_MKFS += ("-E", "lazy_itable_init=1,nodiscard", "-i", "8192")


class CellVolume:
    """The cell directory's loop volume, its devpts instance and its overlay clone."""

    def __init__(self, cell_dir: Path) -> None:
        self.cell_dir = cell_dir
        self.image = cell_dir.with_name(cell_dir.name + ".volume")
        self.mounted = False
        self.volume_bytes: int | None = None
        self.ptys: Path | None = None
        self.clone: Path | None = None
        """The overlay clone's mount point (``mount_clone``), the first mount ``close`` removes."""

    def mount(self, wanted_bytes: int) -> None:
        """Make and mount the volume with room for ``wanted_bytes``; no loop devices: no volume."""
        size = int(wanted_bytes * (1 + _EXT4_OVERHEAD)) + 8 * MIB
        with open(self.image, "wb") as handle:
            handle.truncate(size)  # sparse: costs only what the cell writes
        try:
            run_checked([*_MKFS, str(self.image)], what="make the cell volume", timeout_s=60)
            mount = ["mount", "-o", "loop,nosuid,nodev", str(self.image), str(self.cell_dir)]
            run_checked(mount, what="mount the cell volume", timeout_s=60)
        except ProcessError:
            # No loop devices here (some containers): the row records disk_mib=None, never a claim.
            self.image.unlink(missing_ok=True)
            return
        self.mounted = True
        self.volume_bytes = wanted_bytes
        (self.cell_dir / "lost+found").rmdir()

    def mount_ptys(self, max_ptys: int) -> None:
        """The cell's own devpts instance on the volume (``max=``): never the host's shared pool."""
        ptys = self.cell_dir / "pts"
        ptys.mkdir()
        options = f"newinstance,ptmxmode=0666,mode=0620,max={max_ptys}"
        try:
            run_checked(
                ["mount", "-t", "devpts", "-o", options, "devpts", str(ptys)], what="mount the cell's devpts"
            )
            self.ptys = ptys
        except ProcessError:
            ptys.rmdir()

    def mount_clone(self, template: Path, dest: Path, *, host_uid: int) -> None:
        """``dest`` as an overlay of ``template``, its upper layer on the volume (``OverlayError``)."""
        mount_overlay_clone(template, dest, layers=self.cell_dir / LAYERS_DIR, host_uid=host_uid)
        self.clone = dest

    @property
    def clone_upper(self) -> Path | None:
        return self.cell_dir / LAYERS_DIR / "upper" if self.clone is not None else None

    def full(self) -> bool:
        """Whether the volume has (almost) no room or no inode left."""
        try:
            st = os.statvfs(self.cell_dir)
        except OSError:
            return False
        return st.f_bavail * st.f_frsize < FULL_MARGIN_BYTES or st.f_favail == 0

    def close(self, notes: list[str]) -> str | None:
        """Unmount the clone, the devpts instance and the volume (in that order); a failure, or None.

        A busy mount is retried, then detached lazily (a note in ``notes``): only a mount that
        cannot even be detached is a failure, and then the ones below it stay (a harness fault).
        """
        problem = None
        for attribute, what in (("clone", "the overlay clone"), ("ptys", "the cell devpts")):
            target = getattr(self, attribute)
            if target is not None and problem is None:
                done = unmount(target, what=what)
                problem = done.problem
                notes += [done.note] if done.note is not None else []
                if problem is None:
                    setattr(self, attribute, None)
        if self.mounted and problem is None:
            done = unmount(self.cell_dir, what="the cell volume")
            problem = done.problem
            notes += [done.note] if done.note is not None else []
            self.mounted = problem is not None
        if not self.mounted:
            # A lazily detached volume keeps its loop device until the kernel lets go; the image's
            # blocks are freed then (autoclear), its name can go now.
            with contextlib.suppress(FileNotFoundError):
                self.image.unlink()
        return problem
