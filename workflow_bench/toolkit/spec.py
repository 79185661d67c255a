"""The evaluated toolkit as data: skills per role, MCP servers, an optional index step, runtime mounts.

Public surface: ``SkillRole``, ``McpServer``, ``IndexStep``, ``RuntimeMount``, ``Toolkit`` and
``ToolkitError``. A ``Toolkit`` is built once by ``toolkit.manifest.load_toolkit`` from a
``toolkit.yaml`` and every layer below receives it; nothing here touches the file system.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

SkillRole = Literal["plan", "work", "review"]
MCP_TOOL_PREFIX = "mcp__"


@dataclass(frozen=True, slots=True)
class McpServer:
    """One stdio MCP server the CLI starts for arms that get MCP (sandbox paths in ``command``/``args``).

    ``env`` is the server's whole environment besides PATH and HOME: nothing of the session's
    environment (which reaches the model) is passed on. Only ``read_only_tools`` are ever
    granted; ``mutating_tools`` are declared so the harness can refuse them by name.
    """

    name: str
    command: str
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    read_only_tools: tuple[str, ...] = ()
    mutating_tools: tuple[str, ...] = ()

    def granted_tool_names(self) -> tuple[str, ...]:
        """The CLI's names for the tools agents may call: ``mcp__<server>__<tool>``."""
        return tuple(f"{MCP_TOOL_PREFIX}{self.name}__{tool}" for tool in self.read_only_tools)

    def refused_tool_names(self) -> tuple[str, ...]:
        return tuple(f"{MCP_TOOL_PREFIX}{self.name}__{tool}" for tool in self.mutating_tools)


@dataclass(frozen=True, slots=True)
class IndexStep:
    """How the toolkit indexes a repository: ``command`` run in the clone, writing only ``output``.

    ``env`` is added to the sandbox's tool environment (e.g. where the tool keeps its registry,
    pointed inside ``output`` so the snapshot carries it).

    The index digest must be reproducible (same commit, same toolkit → same digest), so files
    whose bytes change from build to build (timestamps, a database's page layout) are named in
    ``digest_volatile`` (glob patterns relative to ``output``) and left out of it; when those
    files carry content, ``digest_command`` (run read-only in the sandbox after the build) prints
    a canonical dump of it, whose lines, sorted, stand in for them in the digest.
    """

    command: tuple[str, ...]
    output: str
    env: Mapping[str, str] = field(default_factory=dict)
    digest_volatile: tuple[str, ...] = ()
    digest_command: tuple[str, ...] | None = None


@dataclass(frozen=True, slots=True)
class RuntimeMount:
    """A host directory the toolkit's servers need (e.g. a node prefix), bound read-only at ``target``."""

    source: str
    target: str


@dataclass(frozen=True, slots=True)
class Toolkit:
    """Which skill directory plays each role, and what else the toolkit brings.

    Skills live at ``<skills_dir>/<name>/SKILL.md``; ``skills_dir`` defaults to ``<root>/skills``.
    ``digest`` fingerprints the manifest and every file of the role skills (``None`` for a toolkit
    built in code, e.g. by the canary).
    """

    root: str
    roles: Mapping[SkillRole, str]
    name: str = "unnamed"
    version: str | None = None
    digest: str | None = None
    skills_dir: str | None = None
    mcp_servers: tuple[McpServer, ...] = ()
    index: IndexStep | None = None
    runtime_mounts: tuple[RuntimeMount, ...] = ()

    def skill_for(self, role: SkillRole) -> str:
        return self.roles[role]

    @property
    def skills_path(self) -> Path:
        return Path(self.skills_dir) if self.skills_dir else Path(self.root) / "skills"

    @property
    def skill_names(self) -> tuple[str, ...]:
        return tuple(sorted(set(self.roles.values())))

    def role_of(self, skill_name: str) -> SkillRole | None:
        return next((role for role, name in self.roles.items() if name == skill_name), None)

    @property
    def granted_mcp_tools(self) -> tuple[str, ...]:
        return tuple(name for server in self.mcp_servers for name in server.granted_tool_names())


class ToolkitError(ValueError):
    """An invalid toolkit (file, key and reason named): exit 2, nothing run."""
