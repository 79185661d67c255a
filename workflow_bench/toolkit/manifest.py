"""Loading ``toolkit.yaml``: the one way a ``Toolkit`` is built from ``--toolkit DIR|NAME``.

Public surface: ``load_toolkit``, ``resolve_toolkit_dir``, ``NAMED_TOOLKITS``, ``MANIFEST``, and
``ToolkitFile``: the file's declarative model, which is its schema (every key, its type and its
rule, declared once). Strict like task files: the project's bounded, duplicate-key-rejecting YAML
loader in front, then the model validated once (unknown keys refused, every defect reported at
once, each naming the file and key: the runner exits 2), then one pass of checks that need the
file system (the skills root, each role's SKILL.md, each mount source). ``{cache}`` in a path
stands for the ./dev cache directory, where installed toolkits (node, GitNexus) live.

Example (all paths relative to the toolkit directory unless absolute)::

    name: demo                      # [a-z0-9_-]+
    version: "1.0"                  # recorded in every row
    skills_root: skills             # holds <skill>/SKILL.md
    roles: {plan: plan, work: work, review: review}
    mcp_servers:                    # optional; started by the CLI inside the cell's sandbox
      - name: graph
        command: /usr/bin/python3   # a sandbox path
        args: [server.py]
        env: {KEY: value}           # the server's only variables besides PATH and HOME
        read_only_tools: [lookup]   # granted as mcp__graph__lookup
        mutating_tools: [rename]    # never granted; listed so they can be refused by name
    index: {command: [tool, analyze], output: .index, env: {K: v}}   # optional
    #   digest: {volatile: [meta.json], command: [tool, dump]}        # optional, see IndexStep
    runtime_mounts: [{source: "{cache}/node", target: /opt/node}]   # optional, read-only

Adding a key is one field in ``ToolkitFile`` (or a part of it) plus its use in ``_build``.
"""

from __future__ import annotations

import hashlib
import json
import re
import stat
from collections.abc import Callable, Mapping
from pathlib import Path, PurePosixPath
from typing import Annotated, Any

from pydantic import AfterValidator, Field, ValidationError, model_validator

from workflow_bench.claude_cli import default_cache_dir
from workflow_bench.input_files import (
    InputFileError,
    InputModel,
    TreeLimitError,
    bounded_walk,
    load_yaml,
    problems,
    read_bounded,
)
from workflow_bench.redaction import printable

from .spec import IndexStep, McpServer, RuntimeMount, SkillRole, Toolkit, ToolkitError

MANIFEST = "toolkit.yaml"
MAX_MANIFEST_BYTES = 64 * 1024
MAX_SKILL_ENTRIES, MAX_SKILL_DEPTH = 10_000, 32  # a role skill is a few Markdown files
CORPUS_TOOLKIT = Path(__file__).resolve().parents[1] / "corpus" / "toolkit"
SHIPPED = Path(__file__).resolve().parent / "shipped"
NAMED_TOOLKITS: Mapping[str, Path] = {"demo": CORPUS_TOOLKIT, "gitnexus": SHIPPED / "gitnexus"}
ROLES: tuple[SkillRole, ...] = ("plan", "work", "review")
_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
_TOOL = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_ENV_NAME = re.compile(r"^[A-Z_][A-Z0-9_]{0,63}$")
# The harness owns these in every sandbox; a toolkit may not hide the CLI, HOME or the workspace.
_RESERVED_TARGETS = (
    "/workspace",
    "/home",
    "/tmp",
    "/usr",
    "/etc",
    "/proc",
    "/dev",
    "/run",
    "/opt/claude",
    "/opt/wfbench-mcp",
)


# ── value rules (each one error message, raised where the value is) ──────────────────────────


def _text(value: str) -> str:
    if not value.strip() or "\x00" in value:
        raise ValueError(f"want a non-empty string, got {value!r}")
    return value


def _name(value: str) -> str:
    if not _NAME.match(value):
        raise ValueError(f"{value!r} must match {_NAME.pattern}")
    return value


def _server_name(value: str) -> str:
    if not _NAME.match(value) or "__" in value:
        raise ValueError(f"{value!r} must match {_NAME.pattern} without '__'")
    return value


def _strings(value: tuple[str, ...]) -> tuple[str, ...]:
    if not all(item and "\x00" not in item for item in value):
        raise ValueError(f"want a list of non-empty strings, got {list(value)!r}")
    if len(set(value)) != len(value):
        raise ValueError("duplicate entries")
    return value


def _tools(value: tuple[str, ...]) -> tuple[str, ...]:
    for item in _strings(value):
        if not _TOOL.match(item):
            raise ValueError(f"{item!r} must match {_TOOL.pattern}")
    return value


def _env(value: dict[str, str]) -> dict[str, str]:
    if not all(_ENV_NAME.match(k) for k in value):
        raise ValueError(f"want a mapping of VARIABLE: string, got {value!r}")
    return value


def _command(value: tuple[str, ...]) -> tuple[str, ...]:
    if not value:
        raise ValueError("empty command")
    return _strings(value)


def _sandbox_command(value: str) -> str:
    if not value.startswith("/"):
        raise ValueError(f"want an absolute path inside the sandbox, got {value!r}")
    return value


def _clone_path(value: str) -> str:
    pure = PurePosixPath(value)
    if pure.is_absolute() or ".." in pure.parts or not pure.parts or pure.parts[0] == ".git":
        raise ValueError(f"want a relative path inside the clone (not .git), got {value!r}")
    return pure.as_posix()


def _globs(value: tuple[str, ...]) -> tuple[str, ...]:
    for pattern in _strings(value):
        pure = PurePosixPath(pattern)
        if pure.is_absolute() or ".." in pure.parts:
            raise ValueError(f"want glob patterns relative to index.output, got {pattern!r}")
    return value


def _mount_target(value: str) -> str:
    pure = PurePosixPath(value)
    if not pure.is_absolute() or ".." in pure.parts or str(pure) == "/":
        raise ValueError(f"want an absolute sandbox path, got {value!r}")
    if any(
        str(pure) == r or str(pure).startswith(r + "/") or r.startswith(str(pure) + "/")
        for r in _RESERVED_TARGETS
    ):
        raise ValueError(f"{value} overlaps a path the harness owns")
    return str(pure)


Text = Annotated[str, AfterValidator(_text)]
Name = Annotated[str, AfterValidator(_text), AfterValidator(_name)]
# A YAML list arrives as a list: the tuple (frozen) is built from it; each item stays strict.
_FROM_LIST = Field(strict=False)
Strings = Annotated[tuple[str, ...], _FROM_LIST, AfterValidator(_strings)]
Tools = Annotated[tuple[str, ...], _FROM_LIST, AfterValidator(_tools)]
Env = Annotated[dict[str, str], AfterValidator(_env)]
Command = Annotated[tuple[str, ...], _FROM_LIST, AfterValidator(_command)]


# ── the file's model ─────────────────────────────────────────────────────────────────────────


class Roles(InputModel):
    """Which skill plays each role: exactly plan, work and review."""

    plan: Name
    work: Name
    review: Name


class ServerDecl(InputModel):
    """One stdio MCP server (``spec.McpServer``)."""

    name: Annotated[str, AfterValidator(_text), AfterValidator(_server_name)]
    command: Annotated[str, AfterValidator(_text), AfterValidator(_sandbox_command)]
    args: Strings = ()
    env: Env = Field(default_factory=dict)
    read_only_tools: Tools
    mutating_tools: Tools = ()

    @model_validator(mode="after")
    def _grants(self) -> ServerDecl:
        both = sorted(set(self.read_only_tools) & set(self.mutating_tools))
        if both:
            raise ValueError(
                f"read_only_tools: {both} also listed as mutating; mutating tools are never granted"
            )
        if not self.read_only_tools:
            raise ValueError("read_only_tools: a server with no read-only tool grants agents nothing")
        return self


class IndexDigestDecl(InputModel):
    volatile: Annotated[tuple[str, ...], _FROM_LIST, AfterValidator(_globs)] = ()
    command: Command | None = None


class IndexDecl(InputModel):
    """The toolkit's index step (``spec.IndexStep``)."""

    command: Command
    output: Annotated[str, AfterValidator(_clone_path)]
    env: Env = Field(default_factory=dict)
    digest: IndexDigestDecl | None = None


class MountDecl(InputModel):
    source: Text
    target: Annotated[str, AfterValidator(_text), AfterValidator(_mount_target)]


class ToolkitFile(InputModel):
    """``toolkit.yaml``: every key, its type and its rule."""

    name: Name
    version: Text
    skills_root: Text
    roles: Roles
    mcp_servers: Annotated[tuple[ServerDecl, ...], _FROM_LIST] = ()
    index: IndexDecl | None = None
    runtime_mounts: Annotated[tuple[MountDecl, ...], _FROM_LIST] = ()

    @model_validator(mode="after")
    def _unique_servers(self) -> ToolkitFile:
        names = [server.name for server in self.mcp_servers]
        for i, name in enumerate(names):
            if name in names[:i]:
                raise ValueError(f"mcp_servers[{i}].name: duplicate server name {name!r}")
        return self


def resolve_toolkit_dir(value: str | Path) -> Path:
    """``--toolkit``: a shipped name (``demo``) or a directory holding ``toolkit.yaml``."""
    text = str(value)
    if text in NAMED_TOOLKITS:
        return NAMED_TOOLKITS[text]
    path = Path(text).expanduser()
    if not path.is_dir():
        known = ", ".join(sorted(NAMED_TOOLKITS))
        raise ToolkitError(f"--toolkit {text}: not a directory and not a shipped toolkit ({known})")
    return path.resolve()


def load_toolkit(value: str | Path) -> Toolkit:
    """The toolkit named or located by ``value``, fully checked; ``ToolkitError`` naming every defect."""
    root = resolve_toolkit_dir(value)
    manifest = root / MANIFEST
    data = _read(manifest)
    try:
        declared = ToolkitFile.model_validate(data)
    except ValidationError as exc:
        raise ToolkitError(
            "\n".join(f"{manifest}: {key}: {message}" for key, message in problems(exc, ToolkitFile))
        ) from None
    return _build(root, manifest, declared)


def _build(root: Path, manifest: Path, declared: ToolkitFile) -> Toolkit:
    """The checks that need the file system, then the ``Toolkit``."""

    def fail(key: str, message: str) -> ToolkitError:
        return ToolkitError(f"{manifest}: {key}: {message}")

    skills_dir = _existing_dir(root, declared.skills_root, "skills_root", fail)
    roles: dict[SkillRole, str] = {}
    for role in ROLES:
        skill = getattr(declared.roles, role)
        if not (skills_dir / skill / "SKILL.md").is_file():
            raise fail(f"roles.{role}", f"{skills_dir / skill / 'SKILL.md'} does not exist")
        roles[role] = skill
    mounts = tuple(
        RuntimeMount(
            source=str(_existing_dir(root, m.source, f"runtime_mounts[{i}].source", fail)), target=m.target
        )
        for i, m in enumerate(declared.runtime_mounts)
    )
    index = declared.index
    try:
        digest = _digest(manifest.read_bytes(), skills_dir, roles)
    except (TreeLimitError, OSError) as exc:
        raise fail("roles", f"a role skill cannot be read: {printable(str(exc), 200)}") from None
    return Toolkit(
        root=str(root),
        roles=roles,
        name=declared.name,
        version=declared.version,
        digest=digest,
        skills_dir=str(skills_dir),
        mcp_servers=tuple(
            McpServer(s.name, s.command, s.args, dict(s.env), s.read_only_tools, s.mutating_tools)
            for s in declared.mcp_servers
        ),
        index=None
        if index is None
        else IndexStep(
            command=index.command,
            output=index.output,
            env=dict(index.env),
            digest_volatile=index.digest.volatile if index.digest else (),
            digest_command=index.digest.command if index.digest else None,
        ),
        runtime_mounts=mounts,
    )


def _read(manifest: Path) -> Mapping[str, Any]:
    if not manifest.is_file():
        raise ToolkitError(f"{manifest}: (file): no such file; a toolkit directory holds {MANIFEST}")
    try:
        raw = read_bounded(manifest, max_bytes=MAX_MANIFEST_BYTES)  # refuses FIFOs, devices, giants
    except InputFileError as err:
        raise ToolkitError(f"{manifest}: (file): {err}") from None
    try:
        data = load_yaml(raw.decode("utf-8"))  # the project's loader: duplicate keys, alias bombs refused
    except UnicodeDecodeError as err:
        raise ToolkitError(f"{manifest}: (file): not UTF-8: {err}") from None
    except InputFileError as err:
        raise ToolkitError(f"{manifest}: (yaml): {err}") from None
    if not isinstance(data, Mapping):
        raise ToolkitError(f"{manifest}: (document): want a mapping, got {type(data).__name__}")
    return data


def _expand(root: Path, text: str) -> Path:
    path = Path(text.replace("{cache}", str(default_cache_dir()))).expanduser()
    return path if path.is_absolute() else root / path


def _existing_dir(root: Path, text: str, key: str, fail: Callable[[str, str], ToolkitError]) -> Path:
    path = _expand(root, text)
    if not path.is_dir():
        hint = " (an installed toolkit: run ./dev setup --<toolkit name>)" if "{cache}" in text else ""
        raise fail(key, f"{path} is not a directory{hint}")
    return path.resolve()


def _digest(manifest: bytes, skills_dir: Path, roles: Mapping[SkillRole, str]) -> str:
    """sha256 over the manifest bytes and every file of every role skill (path, content)."""
    h = hashlib.sha256()
    h.update(json.dumps({"manifest": hashlib.sha256(manifest).hexdigest()}).encode())
    for skill in sorted(set(roles.values())):
        base = skills_dir / skill
        # bounded_walk's order is sorted path order; only regular files count (no link is followed).
        for rel, full, st in bounded_walk(base, max_entries=MAX_SKILL_ENTRIES, max_depth=MAX_SKILL_DEPTH):
            if stat.S_ISREG(st.st_mode):
                content = hashlib.sha256(Path(full).read_bytes()).hexdigest()
                h.update(json.dumps([f"{skill}/{rel}", content]).encode())
    return "sha256:" + h.hexdigest()
