"""The external comparator plugin (the ``ce_*`` arms): verified, snapshotted, mounted read-only.

The operator supplies the plugin explicitly (``--ce-plugin-dir`` and the exact
``--ce-plugin-version``); the version must equal the one in its manifest
(``.claude-plugin/plugin.json``). The plugin is copied once into a bounded,
symlink-free, read-only snapshot with a manifest digest, so every ``ce_*`` cell
of the sweep runs the same bytes and every ``ce_*`` row can name them. The
snapshot is mounted only into ``ce_*`` sessions.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from workflow_bench.digests import canonical_digest
from workflow_bench.input_files import (
    InputFileError,
    Text,
    TreeLimitError,
    bounded_walk,
    name_problem,
    problems,
    read_bounded,
)
from workflow_bench.redaction import printable

MANIFEST = Path(".claude-plugin") / "plugin.json"
SANDBOX_PLUGIN_DIR = "/opt/comparator-plugin"
# Skill names the comparator must provide per role (the reference's compound-engineering names).
COMPARATOR_SKILLS = {"plan": "ce-plan", "work": "ce-work", "review": "ce-code-review"}
MAX_FILES = 2000
MAX_DEPTH = 32  # a plugin is skills/<skill>/<docs>, agents/, commands/: a handful of levels
MAX_TOTAL_BYTES = 32 * 1024 * 1024  # a skills plugin is prose; anything bigger is not what we think it is


MAX_MANIFEST_BYTES = 64 * 1024  # plugin.json is a few hundred bytes of metadata


class ComparatorError(ValueError):
    """The comparator plugin was rejected; nothing ran."""


def _read_capped(path: Path, relative: str, room: int) -> bytes:
    """A plugin file's bytes, never reading more than the snapshot's remaining budget."""
    try:
        return read_bounded(path, max_bytes=max(room, 0))
    except InputFileError as exc:
        raise ComparatorError(
            f"--ce-plugin-dir: {relative}: {exc} (snapshot limit {MAX_TOTAL_BYTES} bytes)"
        ) from None


@dataclass(frozen=True, slots=True)
class ComparatorPlugin:
    snapshot: Path
    name: str
    version: str
    manifest_digest: str


class PluginManifest(BaseModel):
    """The keys of the plugin's ``plugin.json`` the harness reads. The file is the plugin author's
    format (description, author, ...), so other keys are ignored, not refused."""

    model_config = ConfigDict(frozen=True, extra="ignore", strict=True)

    name: Text = Field(description="the plugin's name, recorded in every ce_* row")
    version: object = Field(None, description="must equal --ce-plugin-version exactly")


def _manifest(plugin_dir: Path) -> PluginManifest:
    path = plugin_dir / MANIFEST
    if not path.is_file() or path.is_symlink():
        raise ComparatorError(f"--ce-plugin-dir {plugin_dir}: no regular {MANIFEST}")
    try:
        data = json.loads(read_bounded(path, max_bytes=MAX_MANIFEST_BYTES).decode("utf-8"))
    except (OSError, ValueError) as exc:
        raise ComparatorError(
            f"--ce-plugin-dir {plugin_dir}: {MANIFEST} is not readable JSON: {exc}"
        ) from exc
    try:
        return PluginManifest.model_validate(data)
    except ValidationError as exc:
        key, message = problems(exc, PluginManifest)[0]
        raise ComparatorError(f"--ce-plugin-dir {plugin_dir}: {MANIFEST}: {key}: {message}") from None


def snapshot_comparator(plugin_dir: Path, *, version: str, dest: Path, roles: set[str]) -> ComparatorPlugin:
    """Validate the plugin, then copy it read-only into ``dest``; raises ComparatorError."""
    plugin_dir = plugin_dir.resolve()
    manifest = _manifest(plugin_dir)
    if manifest.version != version:
        raise ComparatorError(
            f"--ce-plugin-version {version!r} does not match {plugin_dir / MANIFEST} "
            f"version {manifest.version!r}"
        )
    for role in sorted(roles):
        skill = plugin_dir / "skills" / COMPARATOR_SKILLS[role] / "SKILL.md"
        if not skill.is_file():
            raise ComparatorError(
                f"--ce-plugin-dir {plugin_dir}: the {role} arms need {skill.relative_to(plugin_dir)}"
            )
    entries = []
    total = 0
    try:
        walked = list(bounded_walk(plugin_dir, max_entries=4 * MAX_FILES, max_depth=MAX_DEPTH))
    except (TreeLimitError, OSError) as exc:
        raise ComparatorError(f"--ce-plugin-dir: {printable(str(exc), 200)}") from None
    for relative, full, st in walked:
        shown = printable(relative, 200)
        if (problem := name_problem(Path(relative).name)) is not None:
            raise ComparatorError(f"--ce-plugin-dir: {shown}: {problem}")
        if stat.S_ISLNK(st.st_mode):
            raise ComparatorError(f"--ce-plugin-dir: {shown} is a symlink; the snapshot takes no links")
        if stat.S_ISREG(st.st_mode):
            data = _read_capped(Path(full), relative, MAX_TOTAL_BYTES - total)
            total += len(data)
            entries.append({"path": relative, "sha256": hashlib.sha256(data).hexdigest(), "size": len(data)})
        elif not stat.S_ISDIR(st.st_mode):
            raise ComparatorError(f"--ce-plugin-dir: {shown} is not a regular file or directory")
        if len(entries) > MAX_FILES or total > MAX_TOTAL_BYTES:
            raise ComparatorError(f"--ce-plugin-dir: over {MAX_FILES} files or {MAX_TOTAL_BYTES} bytes")
    shutil.copytree(plugin_dir, dest, symlinks=True)
    # The copy holds exactly what was walked above: deepest first, so a parent stays writable.
    for relative, _full, st in reversed(walked):
        os.chmod(dest / relative, 0o555 if stat.S_ISDIR(st.st_mode) else 0o444)
    os.chmod(dest, 0o555)
    return ComparatorPlugin(
        snapshot=dest, name=manifest.name, version=version, manifest_digest=canonical_digest(entries)
    )


def comparator_for_arms(
    roles: set[str], *, plugin_dir: Path | None, version: str | None
) -> ComparatorPlugin | None:
    """The snapshot the ``ce_*`` arms (needing ``roles``) run, in a fresh temp dir; None without them.

    The plugin flags are required with a ``ce_*`` arm and refused without one (ComparatorError).
    The caller removes ``snapshot.parent`` when the sweep ends.
    """
    if not roles:
        if plugin_dir is not None or version is not None:
            raise ComparatorError("--ce-plugin-dir/--ce-plugin-version are only for ce_* arms")
        return None
    if plugin_dir is None or not version:
        raise ComparatorError("ce_* arms need both --ce-plugin-dir and --ce-plugin-version")
    dest = Path(tempfile.mkdtemp(prefix="wfbench-comparator-")) / "plugin"
    try:
        return snapshot_comparator(plugin_dir, version=version, dest=dest, roles=roles)
    except BaseException:
        shutil.rmtree(dest.parent, ignore_errors=True)
        raise
