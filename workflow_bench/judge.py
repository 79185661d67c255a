"""The two judges of an implementation cell: the authored verify and the hidden oracle.

Both run after every model process has exited, in a fresh sandbox with the
workspace read-only and no network. The oracle is staged only then, at a
random mount outside the workspace, its output is never kept (it could quote
the hidden tests into a row the next proposer reads), and every staged byte
is re-checked afterwards before anything else happens to the clone.
"""

from __future__ import annotations

import secrets
import shutil
import threading
from pathlib import Path

from .oracles import OracleSnapshot, stage_oracle, verify_staged
from .process import ProcessError
from .sandbox import Mount, RunPolicy, Sandbox, tool_environment

ORACLE_ENV_VAR = "WORKFLOW_BENCH_ORACLE_ROOT"  # keep in sync with the oracle commands in tasks.*.yaml
OUTPUT_TAIL_CHARS = 4000  # reference value for authored_test_output


def run_verify(
    sandbox: Sandbox, command: str, *, timeout_s: float, cancel: threading.Event
) -> tuple[bool, str]:
    """Run the task's authored verify; returns (passed, output tail). Infrastructure failures raise."""
    result = sandbox.run(
        ["/bin/sh", "-c", command],
        policy=RunPolicy(workspace_writable=False),
        timeout_s=timeout_s,
        cancel=cancel,
    )
    if result.state != "exited":
        raise ProcessError("authored verify", result)
    output = (result.stdout.decode("utf-8", "replace") + result.stderr_tail)[-OUTPUT_TAIL_CHARS:]
    return result.returncode == 0, output


def run_hidden_oracle(
    sandbox: Sandbox, snapshot: OracleSnapshot, *, scratch: Path, timeout_s: float, cancel: threading.Event
) -> bool:
    """Stage the oracle under ``scratch``, run it read-only, re-check its bytes, erase it."""
    token = secrets.token_hex(8)
    staged = scratch / f"oracle-{token}"
    target = f"/.wfbench-oracle-{token}"
    stage_oracle(snapshot, staged)
    try:
        result = sandbox.run(
            ["/bin/sh", "-c", snapshot.command],
            policy=RunPolicy(workspace_writable=False, mounts=(Mount(source=staged, target=target),)),
            env=tool_environment({ORACLE_ENV_VAR: target}),
            timeout_s=timeout_s,
            cancel=cancel,
        )
        verify_staged(snapshot, staged)
    finally:
        shutil.rmtree(staged, ignore_errors=True)
    if result.state != "exited":
        # Never carry the oracle's own output into an error: it may quote the hidden tests.
        raise RuntimeError(f"hidden oracle did not complete: {result.state}")
    return result.returncode == 0
