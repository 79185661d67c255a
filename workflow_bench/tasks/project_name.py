"""What ``tasks new``'s prompt calls the project (``{repo_name}``): never a directory's name.

A clone's directory (and a local remote's path) is often named after a task, a ticket or a
temporary path (issue 32: the prompt said "of tmp-clone-4711"), so the name is, in order: the last
path part of an ``origin`` remote on a host (``parse`` for
``https://github.com/r1chardj0n3s/parse.git`` or ``git@github.com:r1chardj0n3s/parse.git``);
the name the base commit's manifest declares (``package.json``'s ``name``, ``pyproject.toml``'s
``[project]`` or ``[tool.poetry]`` name, ``Cargo.toml``'s ``[package]`` name, ``go.mod``'s
module path); else ``UNNAMED``.

Callers: ``tasks.new``.
"""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path
from typing import Protocol

from workflow_bench.workspace.git import query_git

UNNAMED = "this repository"
# A remote on a host: scheme://host/... (not file://) or scp-like [user@]host:path.
_HOSTED = re.compile(r"^(?:(?!file://)[a-z][a-z0-9+.-]*://[^/]+/|[^/:]+:(?!/))(?P<path>.+)$", re.I)
_NAME = re.compile(r"^[@\w][\w@./+-]{0,199}$")


class _Base(Protocol):
    def read(self, path: str) -> bytes | None: ...


def remote_name(url: str) -> str | None:
    """The repository name in a hosted remote's URL; None for a local path or ``file://``."""
    hosted = _HOSTED.match(url.strip())
    if hosted is None:
        return None
    name = re.sub(r"\.git$", "", hosted.group("path").rstrip("/").rsplit("/", 1)[-1])
    return name if _NAME.match(name) else None


def manifest_name(base: _Base) -> str | None:
    """The name the base's own manifest declares, or None."""
    for path, read in (
        ("package.json", _package_json),
        ("pyproject.toml", _pyproject),
        ("Cargo.toml", _cargo),
        ("go.mod", _go_mod),
    ):
        data = base.read(path)
        if data is None:
            continue
        try:
            name = read(data.decode("utf-8"))
        except (ValueError, UnicodeDecodeError, AttributeError, TypeError):
            continue
        if isinstance(name, str) and _NAME.match(name.strip()):
            return name.strip()
    return None


def project_name(repo: Path, base: _Base) -> str:
    ok, url = query_git(["config", "--get", "remote.origin.url"], cwd=repo)
    return (remote_name(url) if ok else None) or manifest_name(base) or UNNAMED


def _package_json(text: str) -> object:
    return json.loads(text).get("name")


def _pyproject(text: str) -> object:
    data = tomllib.loads(text)
    return data.get("project", {}).get("name") or data.get("tool", {}).get("poetry", {}).get("name")


def _cargo(text: str) -> object:
    return tomllib.loads(text).get("package", {}).get("name")


def _go_mod(text: str) -> object:
    module = re.search(r"^module\s+(\S+)", text, re.MULTILINE)
    return module.group(1).strip('"') if module else None
