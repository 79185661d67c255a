"""Confinement from outside the CLI, for real in bwrap: an execute-only CLI is not dumpable, and the
cell's seccomp filter refuses ptrace and process_vm_readv. Each with its negative control.

The "CLI" here is a copy of ``/usr/bin/sleep`` bound where the CLI goes (``/opt/claude/claude``):
dumpability depends only on whether the caller could read the executed file, not on what it is.
"""

from __future__ import annotations

import shutil
import stat

import pytest

from tests.conftest import needs_root
from workflow_bench.sandbox import (
    CellLimits,
    CellResources,
    RunPolicy,
    SandboxKind,
    create_sandbox,
    write_runtime_dir,
)
from workflow_bench.sandbox._bwrap import exec_only_copy

pytestmark = pytest.mark.component

_READ_CLI = (
    "/opt/claude/claude 30 & p=$!; sleep 0.5; "
    "if head -c 1 /proc/$p/environ > /dev/null 2>&1; then echo environ-readable; "
    "else echo environ-refused; fi; "
    "head -c 1 /opt/claude/claude > /dev/null 2>&1 && echo binary-readable; kill $p"
)


@pytest.mark.parametrize("exec_only", [True, False], ids=["exec-only", "negative-control"])
def test_an_execute_only_cli_is_not_dumpable(tmp_path, bwrap_bin, exec_only):
    fake_cli = tmp_path / "claude"
    shutil.copyfile("/usr/bin/sleep", fake_cli)
    fake_cli.chmod(0o755)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    sandbox = create_sandbox(
        SandboxKind.BWRAP,
        workspace=workspace,
        claude_bin=fake_cli,
        runtime_dir=write_runtime_dir(tmp_path / "runtime"),
        bwrap_bin=bwrap_bin,
        exec_only_cli=exec_only,
    )
    policy = RunPolicy(workspace_writable=False, with_claude=True)
    result = sandbox.run(["/bin/sh", "-c", _READ_CLI], policy=policy, timeout_s=60)
    out = result.stdout.decode()
    if exec_only:
        assert "environ-refused" in out and "binary-readable" not in out, out
        copy = exec_only_copy(fake_cli, tmp_path / "runtime")  # the one made for the run above
        assert stat.S_IMODE(copy.stat().st_mode) == 0o111
    else:
        assert "environ-readable" in out and "binary-readable" in out, out


_PTRACE_CHILD = """import ctypes, subprocess
libc = ctypes.CDLL(None, use_errno=True)
child = subprocess.Popen(["sleep", "30"])
r = libc.ptrace(0x4206, child.pid, 0, 0)
print("ptrace", "refused" if r else "attached", ctypes.get_errno())
buf = ctypes.create_string_buffer(8)
local = (ctypes.c_void_p * 2)(ctypes.cast(buf, ctypes.c_void_p), 8)
remote = (ctypes.c_void_p * 2)(ctypes.cast(buf, ctypes.c_void_p), 8)
r = libc.process_vm_readv(child.pid, local, 1, remote, 1, 0)
err = ctypes.get_errno()  # EFAULT: past the permission check (the address is not mapped there)
print("vm-read", "refused" if r < 0 and err in (1, 13) else "allowed", err)
child.kill()
"""


@pytest.mark.parametrize("denied", [True, False], ids=["filter", "negative-control"])
def test_the_cell_filter_refuses_process_access(tmp_path, bwrap_bin, denied):
    needs_root("the cell's own user namespace (root runner)")
    resources = CellResources(CellLimits(), tmp_path / "cell", process_access_denied=denied)
    resources.open(clone_source=tmp_path)
    try:
        workspace = tmp_path / "cell" / "workspace"
        workspace.mkdir()
        resources.own(workspace)
        sandbox = create_sandbox(
            SandboxKind.BWRAP, workspace=workspace, claude_bin=None, bwrap_bin=bwrap_bin, resources=resources
        )
        result = sandbox.run(
            ["/usr/bin/python3", "-c", _PTRACE_CHILD], policy=RunPolicy(workspace_writable=True), timeout_s=60
        )
        out = result.stdout.decode()
        denied_list = resources.enforced()["seccomp_denied"]
        if denied:
            assert "ptrace refused 1" in out and "vm-read refused 1" in out, out + result.describe()
            assert "ptrace" in denied_list and "pidfd_getfd" in denied_list
        else:  # a child of the same uid, no Landlock: the kernel allows both
            assert "ptrace attached" in out and "vm-read allowed" in out, out + result.describe()
            assert "ptrace" not in denied_list and "keyctl" in denied_list
    finally:
        assert resources.close() is None
