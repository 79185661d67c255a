"""A private two-node Ray cluster on loopback for the ``--executor ray`` tests.

Both nodes are real ``ray start --block`` processes, each in its own session (process group) so
the test stops exactly what it started (never ``ray stop``, which kills every Ray process on the
machine, other users' included). Every port is picked free on 127.0.0.1 and the session directory
is private, so concurrent test runs and other engineers' clusters never collide.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from .subreaper import children

RAY_BIN = Path(sys.executable).parent / "ray"


def free_ports(n: int) -> list[int]:
    sockets = []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            sockets.append(s)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def descendants(pid: int) -> list[int]:
    found, frontier = [], [pid]
    while frontier:
        kids = children(frontier.pop())
        found += kids
        frontier += kids
    return found


def comm(pid: int) -> str:
    try:
        return (Path("/proc") / str(pid) / "comm").read_text().strip()
    except OSError:
        return ""


@dataclass
class Cluster:
    address: str
    head: subprocess.Popen
    worker: subprocess.Popen
    temp: Path
    env: dict[str, str]  # what a driver joining the cluster needs (its auth token)


def _node_ports() -> list[str]:
    agent, grpc, metrics, env_agent, manager, objects, lo = free_ports(7)
    del lo
    workers = free_ports(4)
    return [
        f"--dashboard-agent-listen-port={agent}",
        f"--dashboard-agent-grpc-port={grpc}",
        f"--metrics-export-port={metrics}",
        f"--runtime-env-agent-port={env_agent}",
        f"--node-manager-port={manager}",
        f"--object-manager-port={objects}",
        f"--worker-port-list={','.join(map(str, workers))}",
    ]


def _start(argv: list[str], log: Path, env: dict[str, str]) -> subprocess.Popen:
    return subprocess.Popen(
        [str(RAY_BIN), "start", "--block", "--disable-usage-stats", "--node-ip-address=127.0.0.1", *argv],
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
        start_new_session=True,  # its own process group: stopped by id below, nothing else
        env=env,
    )


def _stop(proc: subprocess.Popen) -> None:
    """SIGTERM, then SIGKILL, to the node's process group and every descendant it started."""
    tree = descendants(proc.pid)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=5)  # `ray start --block` often needs longer on a loaded machine: not waited for
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    for pid in tree:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    proc.wait(timeout=10)


@contextlib.contextmanager
def two_node_cluster(log_dir: Path, *, slots_per_node: int = 1) -> Iterator[Cluster]:
    """A head and one worker node, each advertising ``slots_per_node`` wfbench_sandbox slots."""
    # Short on purpose: Ray's AF_UNIX sockets live under it (108-byte limit); removed below.
    temp = Path(tempfile.mkdtemp(prefix="wfbr-"))
    # A private token: the cluster listens on the machine's address (Ray turns 127.0.0.1 into it).
    env = {
        **os.environ,
        "RAY_COLOR_PREFIX": "0",
        "RAY_AUTH_MODE": "token",
        "RAY_AUTH_TOKEN": secrets.token_hex(32),
    }
    (gcs,) = free_ports(1)
    resources = f'{{"wfbench_sandbox": {slots_per_node}}}'
    common = ["--num-cpus=1", f"--resources={resources}", f"--temp-dir={temp}"]
    head = _start(
        [
            "--head",
            f"--port={gcs}",
            "--include-dashboard=false",
            *common,
            *_node_ports(),
        ],
        log_dir / "ray-head.log",
        env,
    )
    worker = None
    try:
        address = f"127.0.0.1:{gcs}"
        worker = _start([f"--address={address}", *common, *_node_ports()], log_dir / "ray-worker.log", env)
        _wait_for_nodes(address, 2, env, head, worker, log_dir)
        yield Cluster(address=address, head=head, worker=worker, temp=temp, env=env)
    finally:
        for proc in (worker, head):
            if proc is not None:
                _stop(proc)
        shutil.rmtree(temp, ignore_errors=True)


def _wait_for_nodes(
    address: str, count: int, env, head, worker, log_dir: Path, timeout_s: float = 180
) -> None:
    probe = (
        "import ray,sys; ray.init(address=sys.argv[1], log_to_driver=False); "
        "print(sum(1 for n in ray.nodes() if n['Alive'] and n['Resources'].get('wfbench_sandbox')))"
    )
    deadline = time.monotonic() + timeout_s
    seen = ""
    while time.monotonic() < deadline:
        for proc in (head, worker):
            if proc.poll() is not None:
                raise RuntimeError(f"a ray node exited early: {_logs(log_dir)}")
        done = subprocess.run(
            [sys.executable, "-c", probe, address], capture_output=True, text=True, env=env, timeout=120
        )
        seen = done.stdout.strip().splitlines()[-1:] or done.stderr[-500:]
        if done.returncode == 0 and seen == [str(count)]:
            return
        time.sleep(1)
    raise RuntimeError(f"the cluster did not reach {count} nodes: {seen}; {_logs(log_dir)}")


def _logs(log_dir: Path) -> str:
    return " | ".join(p.read_text(errors="replace")[-800:] for p in sorted(log_dir.glob("ray-*.log")))
