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
    address = f"127.0.0.1:{gcs}"
    resources = f'{{"wfbench_sandbox": {slots_per_node}}}'
    common = ["--num-cpus=1", f"--resources={resources}", f"--temp-dir={temp}"]
    started: list[subprocess.Popen] = []
    try:
        head_argv = ["--head", f"--port={gcs}", "--include-dashboard=false", *common]
        head = _start_node(head_argv, log_dir / "ray-head.log", env, address, started)
        worker_argv = [f"--address={address}", *common]
        worker = _start_node(worker_argv, log_dir / "ray-worker.log", env, address, started)
        yield Cluster(address=address, head=head, worker=worker, temp=temp, env=env)
    finally:
        for proc in reversed(started):
            _stop(proc)
        shutil.rmtree(temp, ignore_errors=True)


class NodeExited(RuntimeError):
    pass


def _start_node(
    argv: list[str], log: Path, env: dict[str, str], address: str, started: list[subprocess.Popen]
) -> subprocess.Popen:
    """Start one node and wait until the cluster counts it. Ray gives a raylet a fixed 30 s to
    register; on a loaded 2-core machine that can pass, and the node exits: started again (3 tries)."""
    for attempt in range(3):
        proc = _start([*argv, *_node_ports()], log, env)
        try:
            _wait_for_nodes(address, len(started) + 1, env, [*started, proc], log)
        except NodeExited:
            _stop(proc)
            if attempt == 2 or any(p.poll() is not None for p in started):
                raise
            continue
        started.append(proc)
        return proc
    raise AssertionError("unreachable")


def _wait_for_nodes(
    address: str, count: int, env, nodes: list[subprocess.Popen], log: Path, timeout_s: float = 180
) -> None:
    """Until the newest node says it started and the cluster counts ``count`` sandbox nodes."""
    probe = (
        "import ray,sys; ray.init(address=sys.argv[1], log_to_driver=False); "
        "print(sum(1 for n in ray.nodes() if n['Alive'] and n['Resources'].get('wfbench_sandbox')))"
    )
    deadline = time.monotonic() + timeout_s
    seen: object = ""
    while time.monotonic() < deadline:
        for proc in nodes:
            if proc.poll() is not None:
                raise NodeExited(f"a ray node exited early: {_logs(log.parent)}")
        if "Ray runtime started" not in log.read_text(errors="replace"):
            time.sleep(0.5)  # probing a GCS that is not up yet blocks for minutes
            continue
        try:
            done = subprocess.run(
                [sys.executable, "-c", probe, address], capture_output=True, text=True, env=env, timeout=60
            )
        except subprocess.TimeoutExpired:
            continue
        seen = done.stdout.strip().splitlines()[-1:] or done.stderr[-500:]
        if done.returncode == 0 and seen == [str(count)]:
            return
        time.sleep(1)
    raise RuntimeError(f"the cluster did not reach {count} nodes: {seen}; {_logs(log.parent)}")


def _logs(log_dir: Path) -> str:
    return " | ".join(p.read_text(errors="replace")[-800:] for p in sorted(log_dir.glob("ray-*.log")))
