"""Loading ``toolkit.yaml``: the one way a ``Toolkit`` is built from ``--toolkit DIR|NAME``.

Public surface: ``load_toolkit``, ``resolve_toolkit_dir``, ``NAMED_TOOLKITS``, ``MANIFEST``.
Strict like task files: the project's duplicate-key-rejecting YAML loader, a size bound, unknown
keys refused, every path checked; the first defect raises ``ToolkitError`` naming the file and
key (the runner exits 2). ``{cache}`` in a path stands for the ./dev cache directory, where
installed toolkits (node, GitNexus) live.

Schema (all paths relative to the toolkit directory unless absolute)::

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
"""

from __future__ import annotations

import hashlib
import json
import re
import stat
from collections.abc import Mapping
from pathlib import Path, PurePosixPath
from typing import Any

from workflow_bench.claude_cli import default_cache_dir
from workflow_bench.input_files import InputFileError, TreeLimitError, bounded_walk, load_yaml, read_bounded
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
_TOP_KEYS = ("name", "version", "skills_root", "roles", "mcp_servers", "index", "runtime_mounts")
_SERVER_KEYS = ("name", "command", "args", "env", "read_only_tools", "mutating_tools")
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
    """The toolkit named or located by ``value``, fully checked; ``ToolkitError`` on the first defect."""
    root = resolve_toolkit_dir(value)
    manifest = root / MANIFEST
    data = _read(manifest)
    where = str(manifest)

    def fail(key: str, message: str) -> ToolkitError:
        return ToolkitError(f"{where}: {key}: {message}")

    for key in data:
        if key not in _TOP_KEYS:
            raise fail(str(key), f"unknown key; known keys: {', '.join(_TOP_KEYS)}")
    name = _text(data, "name", fail)
    if not _NAME.match(name):
        raise fail("name", f"{name!r} must match {_NAME.pattern}")
    version = _text(data, "version", fail)
    skills_dir = _existing_dir(root, _text(data, "skills_root", fail), "skills_root", fail)
    roles = _roles(data.get("roles"), skills_dir, fail)
    servers = _servers(data.get("mcp_servers", []), fail)
    index = _index(data.get("index"), fail)
    mounts = _mounts(data.get("runtime_mounts", []), root, fail)
    try:
        digest = _digest(manifest.read_bytes(), skills_dir, roles)
    except (TreeLimitError, OSError) as exc:
        raise fail("roles", f"a role skill cannot be read: {printable(str(exc), 200)}") from None
    return Toolkit(
        root=str(root),
        roles=roles,
        name=name,
        version=version,
        digest=digest,
        skills_dir=str(skills_dir),
        mcp_servers=servers,
        index=index,
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


def _text(data: Mapping[str, Any], key: str, fail, *, prefix: str = "") -> str:
    value = data.get(key)
    if not isinstance(value, str) or not value.strip() or "\x00" in value:
        raise fail(prefix + key, f"want a non-empty string, got {value!r}")
    return value


def _strings(value: Any, key: str, fail, pattern: re.Pattern[str] | None = None) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v and "\x00" not in v for v in value):
        raise fail(key, f"want a list of non-empty strings, got {value!r}")
    for item in value:
        if pattern is not None and not pattern.match(item):
            raise fail(key, f"{item!r} must match {pattern.pattern}")
    if len(set(value)) != len(value):
        raise fail(key, "duplicate entries")
    return tuple(value)


def _expand(root: Path, text: str) -> Path:
    path = Path(text.replace("{cache}", str(default_cache_dir()))).expanduser()
    return path if path.is_absolute() else root / path


def _existing_dir(root: Path, text: str, key: str, fail) -> Path:
    path = _expand(root, text)
    if not path.is_dir():
        hint = " (an installed toolkit: run ./dev setup --<toolkit name>)" if "{cache}" in text else ""
        raise fail(key, f"{path} is not a directory{hint}")
    return path.resolve()


def _roles(value: Any, skills_dir: Path, fail) -> dict[SkillRole, str]:
    if not isinstance(value, Mapping) or set(value) != set(ROLES):
        raise fail("roles", f"want exactly the roles {', '.join(ROLES)} mapped to skill names, got {value!r}")
    roles: dict[SkillRole, str] = {}
    for role in ROLES:
        skill = value[role]
        if not isinstance(skill, str) or not _NAME.match(skill):
            raise fail(f"roles.{role}", f"want a skill name matching {_NAME.pattern}, got {skill!r}")
        if not (skills_dir / skill / "SKILL.md").is_file():
            raise fail(f"roles.{role}", f"{skills_dir / skill / 'SKILL.md'} does not exist")
        roles[role] = skill
    return roles


def _servers(value: Any, fail) -> tuple[McpServer, ...]:
    if not isinstance(value, list):
        raise fail("mcp_servers", f"want a list, got {value!r}")
    servers: list[McpServer] = []
    for i, item in enumerate(value):
        key = f"mcp_servers[{i}]"
        if not isinstance(item, Mapping):
            raise fail(key, f"want a mapping, got {item!r}")
        for k in item:
            if k not in _SERVER_KEYS:
                raise fail(f"{key}.{k}", f"unknown key; known keys: {', '.join(_SERVER_KEYS)}")
        name = _text(item, "name", fail, prefix=f"{key}.")
        if not _NAME.match(name) or "__" in name:
            raise fail(f"{key}.name", f"{name!r} must match {_NAME.pattern} without '__'")
        if name in {s.name for s in servers}:
            raise fail(f"{key}.name", f"duplicate server name {name!r}")
        command = _text(item, "command", fail, prefix=f"{key}.")
        if not command.startswith("/"):
            raise fail(f"{key}.command", f"want an absolute path inside the sandbox, got {command!r}")
        env = item.get("env", {})
        if not isinstance(env, Mapping) or not all(
            isinstance(k, str) and _ENV_NAME.match(k) and isinstance(v, str) for k, v in env.items()
        ):
            raise fail(f"{key}.env", f"want a mapping of VARIABLE: string, got {env!r}")
        read_only = _strings(item.get("read_only_tools"), f"{key}.read_only_tools", fail, _TOOL)
        mutating = _strings(item.get("mutating_tools", []), f"{key}.mutating_tools", fail, _TOOL)
        both = sorted(set(read_only) & set(mutating))
        if both:
            raise fail(
                f"{key}.read_only_tools", f"{both} also listed as mutating; mutating tools are never granted"
            )
        if not read_only:
            raise fail(f"{key}.read_only_tools", "a server with no read-only tool grants agents nothing")
        args = _strings(item.get("args", []), f"{key}.args", fail) if item.get("args") else ()
        servers.append(McpServer(name, command, args, dict(env), read_only, mutating))
    return tuple(servers)


def _index(value: Any, fail) -> IndexStep | None:
    if value is None:
        return None
    if not isinstance(value, Mapping) or not {"command", "output"} <= set(value) <= {
        "command",
        "output",
        "env",
        "digest",
    }:
        raise fail("index", f"want a mapping with command, output and optionally env, digest, got {value!r}")
    env = value.get("env", {})
    if not isinstance(env, Mapping) or not all(
        isinstance(k, str) and _ENV_NAME.match(k) and isinstance(v, str) for k, v in env.items()
    ):
        raise fail("index.env", f"want a mapping of VARIABLE: string, got {env!r}")
    command = _strings(value["command"], "index.command", fail)
    output = value["output"]
    pure = PurePosixPath(output) if isinstance(output, str) else None
    if pure is None or pure.is_absolute() or ".." in pure.parts or not pure.parts or pure.parts[0] == ".git":
        raise fail("index.output", f"want a relative path inside the clone (not .git), got {output!r}")
    if not command:
        raise fail("index.command", "empty command")
    volatile, digest_command = _index_digest(value.get("digest"), fail)
    return IndexStep(
        command=command,
        output=pure.as_posix(),
        env=dict(env),
        digest_volatile=volatile,
        digest_command=digest_command,
    )


def _index_digest(value: Any, fail) -> tuple[tuple[str, ...], tuple[str, ...] | None]:
    """``index.digest: {volatile: [glob, ...], command: [...]}`` (both optional)."""
    if value is None:
        return (), None
    if not isinstance(value, Mapping) or not set(value) <= {"volatile", "command"}:
        raise fail("index.digest", f"want a mapping with volatile and/or command, got {value!r}")
    volatile = (
        _strings(value.get("volatile", []), "index.digest.volatile", fail) if value.get("volatile") else ()
    )
    for pattern in volatile:
        pure = PurePosixPath(pattern)
        if not pattern or pure.is_absolute() or ".." in pure.parts:
            raise fail(
                "index.digest.volatile", f"want glob patterns relative to index.output, got {pattern!r}"
            )
    command = None
    if "command" in value:
        command = _strings(value["command"], "index.digest.command", fail)
        if not command:
            raise fail("index.digest.command", "empty command")
    return volatile, command


def _mounts(value: Any, root: Path, fail) -> tuple[RuntimeMount, ...]:
    if not isinstance(value, list):
        raise fail("runtime_mounts", f"want a list, got {value!r}")
    mounts: list[RuntimeMount] = []
    for i, item in enumerate(value):
        key = f"runtime_mounts[{i}]"
        if not isinstance(item, Mapping) or set(item) != {"source", "target"}:
            raise fail(key, f"want a mapping with exactly source and target, got {item!r}")
        source = _existing_dir(root, _text(item, "source", fail, prefix=f"{key}."), f"{key}.source", fail)
        target = _text(item, "target", fail, prefix=f"{key}.")
        pure = PurePosixPath(target)
        if not pure.is_absolute() or ".." in pure.parts or str(pure) == "/":
            raise fail(f"{key}.target", f"want an absolute sandbox path, got {target!r}")
        if any(
            str(pure) == r or str(pure).startswith(r + "/") or r.startswith(str(pure) + "/")
            for r in _RESERVED_TARGETS
        ):
            raise fail(f"{key}.target", f"{target} overlaps a path the harness owns")
        mounts.append(RuntimeMount(source=str(source), target=str(pure)))
    return tuple(mounts)


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
