"""The host-unsafe backend's sandbox → host path translation: whole path components only."""

from __future__ import annotations

from pathlib import Path

import pytest

from workflow_bench.sandbox import Mount, RunPolicy
from workflow_bench.sandbox._host import GIT_SAFE_DIRECTORY, HostSandbox, PathMap

pytestmark = pytest.mark.unit
PATHS = PathMap({"/workspace": "/h/ws", "/workspace/.claude/skills": "/h/skills", "/tmp": "/h/tmp"})


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("/workspace", "/h/ws"),
        ("/workspace/a.py", "/h/ws/a.py"),
        ("cd /workspace && ls", "cd /h/ws && ls"),
        ("--add-dir=/workspace", "--add-dir=/h/ws"),
        ("see `/workspace/x`.", "see `/h/ws/x`."),
        ("in /workspace.", "in /h/ws."),
        ("/workspace/.claude/skills/review", "/h/skills/review"),  # the longest prefix wins
        ("PATH=/usr/bin:/tmp:/bin", "PATH=/usr/bin:/h/tmp:/bin"),
        # not a whole component: left alone
        ("/workspace2", "/workspace2"),
        ("/workspace.bak/x", "/workspace.bak/x"),
        ("/workspace-old", "/workspace-old"),
        ("/srv/workspace/a", "/srv/workspace/a"),
        ("./workspace", "./workspace"),
        ("/tmpfoo", "/tmpfoo"),
    ],
)
def test_translation_is_boundary_only(given, expected):
    assert PATHS.text(given) == expected


def test_bytes_survive_invalid_utf8():
    assert PATHS.data(b"\xff /workspace/a") == b"\xff /h/ws/a"


def test_policy_mounts_and_environment(tmp_path):
    workspace = tmp_path / "cell" / "workspace"
    sandbox = HostSandbox(workspace=workspace, claude_bin=Path("/bin/claude"), runtime_dir=tmp_path / "rt")
    out = tmp_path / "cell" / "review-output"
    policy = RunPolicy(workspace_writable=False, mounts=(Mount(source=out, target="/review-output"),))
    argv = sandbox.argv(["/opt/claude/claude", "--add-dir=/review-output"], policy=policy)
    assert argv[-2:] == ["/bin/claude", f"--add-dir={out}"]
    env = sandbox.environment({"HOME": "/home/agent", "X": "/review-output/r.json"}, policy=policy)
    assert env["HOME"] == str(sandbox.home) and env["X"] == f"{out}/r.json"
    assert {k: env[k] for k in GIT_SAFE_DIRECTORY} == dict(GIT_SAFE_DIRECTORY)
    assert "PYTHONPATH" not in env and "CLAUDE_CONFIG_DIR" not in env  # only what was given
