"""One module owns hardened git: no other module of the package spells a git argv.

``workspace.git`` carries the hardened ``-c`` options and the scrubbed environment; every harness
git command (host or sandbox) is built by it. This test walks the package's sources and fails on
a list or tuple starting with the literal ``"git"``, or a harness shell string running ``git``,
anywhere else (negative control: ``test_a_hand_spelled_git_argv_is_caught``). Scripted *agent*
commands (the canary's attacks, the oracle agent's ``git apply``) are the agent's, not the
harness's, and are listed with that reason.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from workflow_bench.workspace.git import HARDENED_CONFIG, git_argv, git_env

pytestmark = pytest.mark.unit
PACKAGE = Path(__file__).resolve().parents[2] / "workflow_bench"
OWNER = "workspace/git.py"
# Modules whose "git" strings are commands an agent runs inside its own sandbox, not the harness's.
AGENT_COMMANDS = {
    "canary/attacks.py": "attack scripts the scripted attacker runs as the agent",
    "canary/attacks_judging.py": "attack scripts the scripted attacker runs as the agent",
    "tasks/agents.py": "the oracle agent's own Bash command (git apply of the reference patch)",
}
# git as a command inside a compound shell line (``a && git add``, ``x; git diff``, ``$(git ...)``);
# a lone "git init" is the ``what`` label of a harness step, not a command.
_SHELL_GIT = re.compile(r"(?:&&|;|\||\$\(|\n)\s*git\s+[a-z-]+")


def hand_spelled_git(path: str, text: str) -> list[str]:
    """``path:line`` of every git argv or shell git command built outside ``workspace.git``."""
    tree = ast.parse(text)
    docstrings = {
        id(body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and (body := node.body)
        and isinstance(body[0], ast.Expr)
        and isinstance(body[0].value, ast.Constant)
    }
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.List | ast.Tuple) and node.elts:
            first = node.elts[0]
            if isinstance(first, ast.Constant) and first.value == "git":
                found.append(f"{path}:{node.lineno}")
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in docstrings
            and _SHELL_GIT.search(node.value)
        ):
            found.append(f"{path}:{node.lineno}")
    return found


def _sources() -> dict[str, str]:
    return {
        p.relative_to(PACKAGE).as_posix(): p.read_text()
        for p in PACKAGE.rglob("*.py")
        if "corpus/target" not in p.as_posix()
    }


def test_only_the_git_module_spells_a_git_command():
    found = [
        where
        for path, text in _sources().items()
        if path != OWNER and path not in AGENT_COMMANDS
        for where in hand_spelled_git(path, text)
    ]
    assert found == []


def test_a_hand_spelled_git_argv_is_caught():
    assert hand_spelled_git("x.py", 'run(["git", "-C", repo, "status"])\n') == ["x.py:1"]
    assert hand_spelled_git("x.py", 'argv = ("git", "diff")\n') == ["x.py:1"]
    assert hand_spelled_git("x.py", "script = 'cp -R a b && git add -- \"$@\"'\n") == ["x.py:1"]
    assert hand_spelled_git("x.py", "argv = git_argv('add', '--')\n") == []
    assert hand_spelled_git("x.py", '"""Docs.\n\ngit config is ignored; the\ngit bundle is read."""\n') == []


def test_every_hardened_option_is_on_the_argv():
    argv = git_argv("status")
    assert argv[0] == "git" and argv[-1] == "status"
    for key, value in HARDENED_CONFIG:
        assert f"{key}={value}" in argv[argv.index("-c") : -1]
    assert dict(HARDENED_CONFIG)["core.attributesFile"] == "/dev/null"  # the option that had drifted


def test_the_callers_git_variables_never_reach_git():
    host = {"PATH": "/opt/bin:/usr/bin", "GIT_DIR": "/elsewhere", "GIT_WORK_TREE": "/x", "HOME": "/root"}
    env = git_env(host=host)
    assert env["PATH"] == "/opt/bin:/usr/bin"
    assert not {"GIT_DIR", "GIT_WORK_TREE"} & set(env)
    assert env["HOME"] == "/nonexistent" and env["GIT_CONFIG_GLOBAL"] == "/dev/null"
    assert env["GIT_CONFIG_NOSYSTEM"] == env["GIT_ATTR_NOSYSTEM"] == env["GIT_NO_REPLACE_OBJECTS"] == "1"
    assert git_env({"GIT_INDEX_FILE": "/tmp/i"}, host=host)["GIT_INDEX_FILE"] == "/tmp/i"
