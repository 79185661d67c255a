"""The demo under --executor ray on a real two-node Ray cluster (head + worker node, loopback).

The demo sweep runs as Ray tasks on both nodes — real CLI, real bwrap, scripted model — and must
give every cell the outcome the thread pool gives it (the demo module's rows, run in this same
session). Positive control: a sandbox is seen under the worker node's process tree, so cells really
ran off the head. The runner process itself joins the cluster through --ray-address; its rows come
back as data and only it writes the output directory.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.builders import result_dicts
from tests.conftest import short_dir
from workflow_bench.schedule.ray_local import LOCAL_SOCKET_TAIL

from .conftest import DEMO_TASKS, REPO_ROOT
from .ray_cluster import comm, descendants, two_node_cluster

pytestmark = pytest.mark.e2e


def _outcomes(rows: list[dict]) -> dict:
    return {
        (r["task"], r["arm"], r["run"]): (r["resolved"], r["authored_tests_passed"], r["oracle_passed"],
                                          r["error_kind"])
        for r in rows
    }  # fmt: skip


def check_demo_on_a_two_node_cluster(thread_rows: list[dict], tmp_path: Path) -> None:
    """Called by test_demo_sweep with its thread-pool rows (one demo sweep serves both)."""
    out = tmp_path / "out"
    with short_dir() as work_tmp:  # short: relay sockets live below it
        with two_node_cluster(tmp_path) as cluster:
            # The local-instance preflight's bound holds for the sockets real Ray binds.
            sockets = [p for p in cluster.temp.glob("session_2*/sockets/*") if p.is_socket()]
            assert sockets, sorted(cluster.temp.rglob("*"))[:20]
            for bound in sockets:
                assert len(str(bound.relative_to(cluster.temp))) <= len(LOCAL_SOCKET_TAIL), bound
            argv = [sys.executable, "-m", "workflow_bench.runner", "--tasks", str(DEMO_TASKS), "--runs", "1",
                    "--provider", "scripted", "--executor", "ray", "--ray-address", cluster.address,
                    "--workers", "2", "--out", str(out)]  # fmt: skip
            log = tmp_path / "runner.log"
            env = {**cluster.env, "TMPDIR": str(work_tmp)}
            with log.open("wb") as sink:
                proc = subprocess.Popen(argv, cwd=REPO_ROOT, stdout=sink, stderr=subprocess.STDOUT, env=env)
                seen = {"head": set(), "worker": set()}
                while proc.poll() is None:
                    for name, node in (("head", cluster.head), ("worker", cluster.worker)):
                        seen[name] |= {comm(p) for p in descendants(node.pid)}
                    time.sleep(0.05)
            text = log.read_text(errors="replace")
            assert proc.returncode == 0, text[-4000:]
            assert "bwrap" in seen["worker"], f"no cell ran on the worker node: {seen['worker']}"
            assert "bwrap" in seen["head"], f"no cell ran on the head node: {seen['head']}"
            # Negative control for the node preflight: more workers than the cluster's 2 slots.
            refused_out = tmp_path / "refused"
            refused_argv = [*argv[: argv.index("--workers")], "--workers", "3", "--out", str(refused_out)]
            refused = subprocess.run(
                refused_argv, cwd=REPO_ROOT, capture_output=True, text=True, env=env, timeout=300
            )
            assert refused.returncode == 2, refused.stdout[-2000:] + refused.stderr[-2000:]
            assert "fewer than --workers 3" in refused.stdout + refused.stderr
            assert not refused_out.exists(), "a refused sweep leaves nothing behind (no lock, no rows)"
        rows = result_dicts(out)
        assert _outcomes(rows) == _outcomes(thread_rows)
        # Observed on the driver, as with threads: the provider's per-cell ledger reached the rows.
        assert all(r["usage_provider_source"] == "scripted-ledger" for r in rows)
        assert all(r["usage_provider"] == t["usage_provider"] for r, t in zip(
            sorted(rows, key=lambda r: (r["task"], r["arm"])),
            sorted(thread_rows, key=lambda r: (r["task"], r["arm"])), strict=True))  # fmt: skip
        assert list(work_tmp.iterdir()) == [], "cell directories must be removed"
