"""The host-unsafe backend on the real host: privilege drop, read-only phases, exact mode restore."""

from __future__ import annotations

import os

import pytest

from workflow_bench.sandbox import RunPolicy, SandboxKind, create_sandbox
from workflow_bench.sandbox._host import HOST_CHILD_UID
from workflow_bench.workspace.snapshot import workspace_snapshot

pytestmark = pytest.mark.component


@pytest.fixture
def sandbox(tmp_path):
    workspace = tmp_path / "cell" / "workspace"
    workspace.mkdir(parents=True)
    (workspace / "a.txt").write_text("a\n")
    return create_sandbox(SandboxKind.HOST_UNSAFE, workspace=workspace, claude_bin=None, bwrap_bin="")


def test_read_only_phase_cannot_write_and_restores_modes(sandbox):
    before = workspace_snapshot(sandbox.workspace)
    script = "id -u; echo x > /workspace/a.txt; echo y > /workspace/new; touch $HOME/h $TMPDIR/t && echo ok"
    result = sandbox.run(["/bin/sh", "-c", script], policy=RunPolicy(workspace_writable=False), timeout_s=30)
    lines = result.stdout.decode().split()
    assert lines[0] == str(HOST_CHILD_UID if os.geteuid() == 0 else os.geteuid())
    assert lines[-1] == "ok"  # private HOME and tmp are writable
    assert workspace_snapshot(sandbox.workspace) == before  # nothing written, every mode restored


def test_writable_phase_writes_the_clone(sandbox):
    result = sandbox.run(
        ["/bin/sh", "-c", "echo b > /workspace/b.txt && git init -q . && git status --short"],
        policy=RunPolicy(workspace_writable=True),
        timeout_s=30,
    )
    assert result.ok, result.describe()
    assert (sandbox.workspace / "b.txt").read_text() == "b\n"
