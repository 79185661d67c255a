"""The bwrap boundary as built for issue 2, exercised for real (each check can fail)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from workflow_bench.sandbox import (
    RunPolicy,
    SandboxError,
    SandboxKind,
    create_sandbox,
    preflight,
    tool_environment,
)

pytestmark = pytest.mark.component


@pytest.fixture
def sandbox(tmp_path, bwrap_bin):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "file.txt").write_text("hello\n")
    return create_sandbox(SandboxKind.BWRAP, workspace=workspace, claude_bin=None, bwrap_bin=bwrap_bin)


def _sh(sandbox, script, *, writable=True, env=None):
    return sandbox.run(
        ["/bin/sh", "-c", script],
        policy=RunPolicy(workspace_writable=writable),
        timeout_s=30,
        env=env,
    )


def test_runs_as_non_root_in_workspace(sandbox):
    result = _sh(sandbox, "id -u; pwd")
    assert result.ok, result.describe()
    assert result.stdout.decode().split() == ["1000", "/workspace"]


def test_host_environment_does_not_leak(sandbox, monkeypatch):
    monkeypatch.setenv("WFBENCH_HOST_SECRET", "sk-ant-host-secret-value-123456")
    result = _sh(sandbox, "env")
    assert result.ok
    assert b"sk-ant-host-secret" not in result.stdout
    assert b"HOME=/home/agent" in result.stdout


def test_private_tmp_and_home_do_not_persist_between_runs(sandbox):
    assert _sh(sandbox, "echo x > /tmp/marker && echo y > ~/marker").ok
    result = _sh(sandbox, "ls /tmp/marker ~/marker 2>&1; true")
    assert b"No such file" in result.stdout and result.stdout.count(b"No such file") == 2


def test_host_paths_are_invisible(sandbox):
    result = _sh(sandbox, "ls /root; cat /etc/shadow; ls /work; true")
    assert b"No such file" in result.stdout + result.stderr_tail.encode()
    assert b"root:" not in result.stdout


def test_read_only_workspace_rejects_writes(sandbox):
    result = _sh(sandbox, "echo tamper > file.txt", writable=False)
    assert not result.ok
    assert (sandbox.workspace / "file.txt").read_text() == "hello\n"


def test_writable_workspace_accepts_writes(sandbox):
    assert _sh(sandbox, "echo new > new.txt").ok
    assert (sandbox.workspace / "new.txt").read_text() == "new\n"


def test_pid_namespace_hides_host_processes(sandbox):
    result = _sh(sandbox, "ls /proc | grep -c '^[0-9]'")
    assert result.ok
    assert int(result.stdout) < 6, result.stdout  # bwrap, sh, ls, grep — not the host's processes


def test_network_unshared_by_default(sandbox):
    result = _sh(sandbox, "cat /proc/net/dev")
    assert result.ok
    interfaces = [line.split(":")[0].strip() for line in result.stdout.decode().splitlines()[2:]]
    assert interfaces == ["lo"]


def test_timeout_kills_the_sandbox(sandbox):
    result = sandbox.run(
        ["/bin/sh", "-c", "sleep 30"], policy=RunPolicy(workspace_writable=False), timeout_s=1
    )
    assert result.state == "timeout"
    assert result.duration_s < 10


def test_preflight_fails_closed_without_bwrap():
    with pytest.raises(SandboxError, match="apt-get install -y bubblewrap"):
        preflight(SandboxKind.BWRAP, bwrap_bin="/nonexistent/bwrap")


def test_tool_environment_is_an_allowlist():
    os.environ["WFBENCH_PROBE"] = "1"
    try:
        assert "WFBENCH_PROBE" not in tool_environment()
    finally:
        del os.environ["WFBENCH_PROBE"]
    assert Path(tool_environment()["HOME"]) == Path("/home/agent")
