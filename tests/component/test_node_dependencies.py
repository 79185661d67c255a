"""``tasks deps node``: a project's own lockfile installed with the package manager it belongs to.

For each of npm (package-lock.json), pnpm (pnpm-lock.yaml) and classic yarn (yarn.lock): a
project depending on one small registry package gets its lockfile from that tool (pnpm and yarn
from the npm registry, installed once into the cache), then ``tasks deps node --project`` installs
it: exit 0, the package in ``node_modules``, and ``node_modules/.wfbench-deps.json`` naming the
tool, its version and the lockfile's sha256. Negative control per tool: package.json asks for
another version than the lockfile holds — the frozen install refuses it, exit 2 naming the
lockfile, and no ``node_modules`` is left. A second build over an existing ``node_modules`` is
refused, never replaced.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import pytest

from workflow_bench.process import run_process
from workflow_bench.tasks.__main__ import main as tasks_main
from workflow_bench.tasks.deps import DEFAULT_TOOLS, _tool_bin
from workflow_bench.taskspec.repos import cache_root

pytestmark = pytest.mark.component
LOCKFILE = {"npm": "package-lock.json", "pnpm": "pnpm-lock.yaml", "yarn": "yarn.lock"}


def _lock(project: Path, tool: str) -> None:
    """Write the project's lockfile with ``tool`` itself (the registry answers; nothing installed)."""
    binary = _tool_bin(tool, DEFAULT_TOOLS.get(tool, ""), npm="npm", cache=cache_root() / "package-managers")
    argv = {
        "npm": [binary, "install", "--package-lock-only", "--no-audit", "--no-fund", "--ignore-scripts"],
        "pnpm": [binary, "install", "--lockfile-only", "--ignore-scripts"],
        "yarn": [binary, "install", "--ignore-scripts", "--non-interactive", "--no-progress"],
    }[tool]
    env = {**os.environ, "COREPACK_ENABLE_STRICT": "0"}
    result = run_process(argv, cwd=project, env=env, timeout_s=600)
    assert result.ok, result.describe()
    shutil.rmtree(project / "node_modules", ignore_errors=True)  # yarn 1 has no lockfile-only mode
    assert (project / LOCKFILE[tool]).is_file()


@pytest.mark.parametrize("tool", ["npm", "pnpm", "yarn"])
def test_a_lockfile_installs_with_its_own_tool_and_a_stale_one_is_refused(tool, tmp_path, capsys):
    project = tmp_path / "web"
    project.mkdir()
    manifest = {"name": "web", "version": "1.0.0", "private": True, "dependencies": {"left-pad": "1.3.0"}}
    (project / "package.json").write_text(json.dumps(manifest))
    _lock(project, tool)
    assert tasks_main(["deps", "node", "--project", str(project)]) == 0, capsys.readouterr().err
    assert (project / "node_modules" / "left-pad" / "package.json").is_file()
    record = json.loads((project / "node_modules" / ".wfbench-deps.json").read_text())
    lock = project / LOCKFILE[tool]
    assert record["tool"] == tool and record["lockfile"] == lock.name
    assert record["lockfile_sha256"] == hashlib.sha256(lock.read_bytes()).hexdigest()
    assert record["scripts"] == "ignored" and len(record["node_modules_manifest_sha256"]) == 64
    if tool != "npm":
        assert record["tool_version"] == DEFAULT_TOOLS[tool]
    # An existing tree is refused, never replaced.
    capsys.readouterr()
    assert tasks_main(["deps", "node", "--project", str(project)]) == 2
    assert "exists already" in capsys.readouterr().err
    shutil.rmtree(project / "node_modules")

    # Negative control: the lockfile holds 1.3.0, package.json now asks for 1.2.0.
    manifest["dependencies"] = {"left-pad": "1.2.0"}
    (project / "package.json").write_text(json.dumps(manifest))
    code = tasks_main(["deps", "node", "--project", str(project)])
    err = capsys.readouterr().err
    assert code == 2, err
    assert f"{lock.name} does not install ({tool}" in err and "Traceback" not in err
    assert not (project / "node_modules").exists()
