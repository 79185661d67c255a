"""Cells as Ray tasks (``--executor ray``): one cell = one Ray task, its inputs and result shipped as data.

Owns the Ray side of a sweep: starting a private local Ray instance (no ``--ray-address``) or
joining a cluster, the preflight that every node advertising ``wfbench_sandbox`` can really run a
cell here, shipping one cell to a node, and cancelling it. The schedulers in ``pool`` stay
unchanged: a driver thread per in-flight cell (at most ``--workers``) submits the task and waits
for it, so the window, the in-order fold and the breaker see exactly what they see with threads.

What crosses to the node (``ShippedCell``): the sweep settings without the three driver-only
parts (the cancel event, the console, the key minting / per-cell accounting), the task's context,
the arm, the cell key and a credential minted on the driver. What comes back: the ``CellResult``
(row + artifacts as bytes). The driver then adds what only it can observe (the provider's per-cell
ledger) and alone writes the output directory.

What does NOT cross, and is therefore checked rather than assumed (``node_problems``): the task's
sanitized template, the sweep's work root and runtime files, the pinned CLI and bwrap are paths
the node must see at the same place; and a loopback model upstream (the scripted provider, a local
gateway) is reachable only from the driver's machine, so with one every sandbox node must be this
machine. A node that fails fails the preflight (exit 2, nothing run); a node that joins later and
fails the same check in its task stops the sweep as a harness error. Never retried: a cell is paid.

Cancellation: the sweep's cancel event → ``ray.cancel`` on the in-flight task, which raises
``KeyboardInterrupt`` in the task's main thread; the task sets the cell's own cancel event, lets
the cell wind down (its sessions end as ``cancelled``) and returns that row, so an in-flight cell
keeps its row exactly as with threads. Callers: ``sweep``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib.util
import ipaddress
import os
import secrets
import shutil
import signal
import socket
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from workflow_bench.arms import ArmSpec
from workflow_bench.cells.context import CellResult, SweepSettings, TaskContext
from workflow_bench.cells.rows import provider_usage
from workflow_bench.cells.run import run_cell
from workflow_bench.providers.access import CellKey, ModelAccess
from workflow_bench.redaction import printable, redact_text

from .ray_address import RayUnreachable, check_ray_head, parse_ray_address
from .ray_local import LOCAL_TEMP_PREFIX
from .resume import harness_version

Executor = Literal["threads", "ray"]
EXECUTORS: tuple[Executor, ...] = ("threads", "ray")
RESOURCE = "wfbench_sandbox"  # a node advertises it (`ray start --resources`) when it can run cells
WAIT_S = 0.2  # how often a driver thread looks at the cancel event while its task runs
LOCAL_OBJECT_STORE_BYTES = 256 * 1024 * 1024  # rows and artifacts are small; the default takes 30 % of RAM
LOCAL_START_ATTEMPTS = 2
CONSOLE_LINE_CHARS = 2000  # as the driver's console: agent text (tool names) never drives a terminal
_SETTINGS_KEPT_ON_DRIVER = ("access", "cancel", "progress")


class ExecutorError(Exception):
    """The executor cannot run cells (Ray missing, unreachable, or no node fit): nothing was run."""


@dataclass(frozen=True, slots=True)
class ExecutorSpec:
    kind: Executor = "threads"
    ray_address: str | None = None  # None with ray: start (and stop) a private local instance

    def __post_init__(self) -> None:
        if self.kind not in EXECUTORS:
            raise ValueError(f"executor must be one of {', '.join(EXECUTORS)}, got {self.kind!r}")
        if self.ray_address is not None and self.kind != "ray":
            raise ValueError("--ray-address needs --executor ray")
        if self.ray_address is not None:
            parse_ray_address(self.ray_address)


RAY_MISSING = "--executor ray needs the optional ray extra (uv sync --extra ray; ./dev installs it)"


def require_ray() -> None:
    """Raise ExecutorError unless Ray is installed (without importing it: see ``RayCells``)."""
    if importlib.util.find_spec("ray") is None:
        raise ExecutorError(RAY_MISSING)


@dataclass(frozen=True, slots=True)
class HostIdentity:
    """Which machine this is: a node may use the driver's loopback upstream only when it matches."""

    machine_id: str
    boot_id: str

    @classmethod
    def here(cls) -> HostIdentity:
        def read(path: str) -> str:
            try:
                return Path(path).read_text(encoding="utf-8").strip()
            except OSError:
                return ""

        return cls(machine_id=read("/etc/machine-id"), boot_id=read("/proc/sys/kernel/random/boot_id"))


def is_loopback_url(url: str) -> bool:
    host = urlsplit(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True, slots=True)
class NodeRequirements:
    """What a node must have for a cell of this sweep; checked by the preflight and by every task."""

    origin: HostIdentity
    loopback_upstream: bool
    harness: str
    claude_bin: str
    bwrap_bin: str
    paths: tuple[str, ...]  # the work root, runtime files, templates: the node must see them in place


def node_problems(need: NodeRequirements) -> list[str]:
    """Why this node cannot run the sweep's cells (empty: it can). Runs on the node."""
    problems = []
    where = socket.gethostname()
    if need.loopback_upstream and HostIdentity.here() != need.origin:
        problems.append(
            f"node {where} is another machine, but the model upstream is loopback on the driver's: "
            "cells must run on the driver's machine"
        )
    if harness_version() != need.harness:
        problems.append(f"node {where} runs workflow-bench {harness_version()}, the driver {need.harness}")
    if not os.access(need.claude_bin, os.X_OK):
        problems.append(f"node {where} has no pinned Claude CLI at {need.claude_bin}")
    if shutil.which(need.bwrap_bin) is None:
        problems.append(f"node {where} has no {need.bwrap_bin}")
    problems += [f"node {where} does not see {p} (a shared path)" for p in need.paths if not Path(p).exists()]
    return problems


@dataclass(frozen=True, slots=True)
class ShippedCell:
    settings: dict[str, Any]  # SweepSettings fields except _SETTINGS_KEPT_ON_DRIVER
    access: ModelAccess  # the credential minted on the driver; no minting, no ledger
    task: TaskContext
    arm: ArmSpec
    key: CellKey
    need: NodeRequirements


def shipped_access(access: ModelAccess, key: CellKey) -> ModelAccess:
    """The cell's credential, minted here (the provider's ledger lives on the driver)."""
    credentials = access.credentials_for(key)
    return dataclasses.replace(
        access, api_key=credentials.api_key, auth_token=credentials.auth_token, mint=None, observe=None
    )


def run_shipped(shipped: ShippedCell, cancel: threading.Event) -> CellResult:
    """The cell on the node, with the node's own cancel event; the one place it is rebuilt."""
    problems = node_problems(shipped.need)
    if problems:
        raise RuntimeError("; ".join(problems))
    cell_secrets = shipped.access.static_secrets

    def progress(line: str) -> None:  # Ray forwards a task's stdout to the driver's console
        print(printable(redact_text(line, cell_secrets), CONSOLE_LINE_CHARS), flush=True)

    settings = SweepSettings(**shipped.settings, access=shipped.access, cancel=cancel, progress=progress)
    return run_cell(settings, shipped.task, shipped.arm, shipped.key)


def _cell_task(shipped: ShippedCell) -> CellResult:
    """The Ray task body: the cell runs in a thread so ``ray.cancel`` can reach this one."""
    cancel, finished = threading.Event(), threading.Event()
    box: dict[str, Any] = {}

    def work() -> None:
        try:
            box["result"] = run_shipped(shipped, cancel)
        except BaseException as exc:  # handed to the task's thread, which re-raises it to the driver
            box["error"] = exc
        finally:
            finished.set()

    threading.Thread(target=work, name="cell", daemon=True).start()
    # An Event, not Thread.join: a KeyboardInterrupt inside join() can leave is_alive() False while
    # the thread still runs (CPython), and the row would be lost.
    while True:
        try:
            if finished.wait(WAIT_S):
                break
        except KeyboardInterrupt:  # ray.cancel: the cell winds down and still returns its row
            cancel.set()
    if "error" in box:
        raise box["error"]
    return box["result"]


def _signal_handlers() -> dict[int, Any]:
    return {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}


def _restore_signal_handlers(handlers: dict[int, Any]) -> None:
    """Ray's core worker installs a SIGTERM handler that aborts the driver (exit -6, rows unwritten):
    the sweep's own handlers (cancel, exit 130) are put back."""
    if threading.current_thread() is not threading.main_thread():
        return
    for sig, handler in handlers.items():
        if handler is not None:
            signal.signal(sig, handler)


def _probe(need: NodeRequirements) -> tuple[str, list[str]]:
    return socket.gethostname(), node_problems(need)


class RayCells:
    """An open Ray connection that runs cells; ``close`` stops a local instance it started."""

    def __init__(self, spec: ExecutorSpec, *, workers: int, need: NodeRequirements) -> None:
        os.environ.setdefault("RAY_COLOR_PREFIX", "0")  # forwarded cell lines stay plain text
        # Under `uv run`, Ray would upload the driver's working directory to every node and run the
        # cells from that copy; nodes run their own installed workflow-bench (checked: harness digest).
        os.environ.setdefault("RAY_ENABLE_UV_RUN_RUNTIME_ENV", "0")
        if spec.ray_address is None and "RAY_AUTH_MODE" not in os.environ and "ray" not in sys.modules:
            # Ray listens on the machine's address even when asked for loopback: a private token per
            # sweep keeps anyone else from submitting code to it, and nothing is written under $HOME.
            # Set before the first `import ray`, which reads the mode once.
            os.environ["RAY_AUTH_MODE"] = "token"
            os.environ["RAY_AUTH_TOKEN"] = secrets.token_hex(32)
        try:
            import ray
        except ImportError as exc:
            raise ExecutorError(RAY_MISSING) from exc
        self._ray = ray
        self.need = need
        self._temp: Path | None = None
        if ray.is_initialized():
            raise ExecutorError("a Ray connection is already open in this process")
        if spec.ray_address is None:
            # A short private directory: Ray's AF_UNIX sockets live under it (108-byte limit), and
            # the shared /tmp/ray of other users on this machine is never touched.
            self._temp = Path(tempfile.mkdtemp(prefix=LOCAL_TEMP_PREFIX))
        else:
            try:
                check_ray_head(spec.ray_address)  # bounded: ray.init alone retries for minutes
            except RayUnreachable as exc:
                raise ExecutorError(str(exc)) from exc
        handlers = _signal_handlers()
        try:
            if spec.ray_address is None:
                self._start_local(workers)
            else:
                ray.init(address=spec.ray_address, log_to_driver=True)
        except Exception as exc:
            self.close()
            raise ExecutorError(
                f"could not start or join Ray ({spec.ray_address or 'local'}): {exc}"
            ) from exc
        finally:
            _restore_signal_handlers(handlers)
        self._remote = ray.remote(max_retries=0, num_cpus=0, resources={RESOURCE: 1})(_cell_task)
        self._probe = ray.remote(max_retries=0, num_cpus=0, resources={RESOURCE: 1})(_probe)

    def _start_local(self, workers: int) -> None:
        # Ray gives a raylet a fixed 30 s to register; on a loaded machine that can pass: once more.
        for attempt in range(LOCAL_START_ATTEMPTS):
            try:
                self._ray.init(
                    num_cpus=max(1, os.cpu_count() or 1),
                    resources={RESOURCE: workers},
                    include_dashboard=False,
                    object_store_memory=LOCAL_OBJECT_STORE_BYTES,
                    _temp_dir=str(self._temp),
                    log_to_driver=True,
                )
                return
            except Exception:
                with contextlib.suppress(Exception):
                    self._ray.shutdown()
                if attempt + 1 == LOCAL_START_ATTEMPTS:
                    raise

    def preflight(self, *, workers: int) -> None:
        """Probe every node advertising the resource; raise ExecutorError unless all fit.

        Fewer slots than ``--workers`` is refused: a task queued behind another could be cancelled
        before it started, and a cell that never ran has no row to keep.
        """
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        nodes = [n for n in self._ray.nodes() if n.get("Alive") and n.get("Resources", {}).get(RESOURCE)]
        if not nodes:
            raise ExecutorError(f"no Ray node advertises the {RESOURCE} resource (README: --executor ray)")
        refs = [
            self._probe.options(
                scheduling_strategy=NodeAffinitySchedulingStrategy(node_id=n["NodeID"], soft=False)
            ).remote(self.need)
            for n in nodes
        ]
        problems = [p for _, found in self._ray.get(refs, timeout=300) for p in found]
        if problems:
            raise ExecutorError("; ".join(problems))
        slots = int(sum(n["Resources"][RESOURCE] for n in nodes))
        if slots < workers:
            raise ExecutorError(
                f"the Ray cluster advertises {slots} {RESOURCE} slot(s), fewer than --workers {workers}"
            )

    def run(self, settings: SweepSettings, task: TaskContext, arm: ArmSpec, key: CellKey) -> CellResult:
        """One cell as a Ray task, waited for on this (driver) thread; cancel → ``ray.cancel``."""
        access = shipped_access(settings.access, key)
        kept = {
            f.name: getattr(settings, f.name)
            for f in dataclasses.fields(SweepSettings)
            if f.name not in _SETTINGS_KEPT_ON_DRIVER
        }
        need = dataclasses.replace(self.need, paths=(*self.need.paths, str(task.template)))
        shipped = ShippedCell(settings=kept, access=access, task=task, arm=arm, key=key, need=need)
        ref = self._remote.remote(shipped)
        cancelled = False
        while not self._ray.wait([ref], timeout=WAIT_S)[0]:
            if settings.cancel.is_set() and not cancelled:
                self._ray.cancel(ref)
                cancelled = True
        try:
            result: CellResult = self._ray.get(ref)
        except self._ray.exceptions.RayTaskError as exc:
            raise RuntimeError(f"{key.label} failed on its Ray node: {exc}") from None
        # The provider's per-cell ledger lives here: observed on the driver, as with threads.
        artifacts = dict(result.artifacts)
        cell_secrets = (*access.static_secrets, *settings.access.static_secrets)
        observed = provider_usage(settings.access, key, artifacts, cell_secrets)
        row = result.row.replace(**observed.model_dump())
        return CellResult(row=row, artifacts=artifacts)

    def close(self) -> None:
        with contextlib.suppress(Exception):
            if self._ray.is_initialized():
                self._ray.shutdown()
        if self._temp is not None:
            shutil.rmtree(self._temp, ignore_errors=True)
            self._temp = None


def open_executor(spec: ExecutorSpec, settings: SweepSettings, *, workers: int) -> RayCells | None:
    """None for threads; for ray an open, preflighted connection (ExecutorError: nothing was run)."""
    if spec.kind == "threads":
        return None
    need = NodeRequirements(
        origin=HostIdentity.here(),
        loopback_upstream=is_loopback_url(settings.access.base_url),
        harness=harness_version(),
        claude_bin=str(settings.harness.claude_bin),
        bwrap_bin=settings.harness.bwrap_bin,
        paths=(str(settings.work_root), str(settings.runtime_dir)),
    )
    cells = RayCells(spec, workers=workers, need=need)
    try:
        cells.preflight(workers=workers)
    except BaseException:
        cells.close()
        raise
    return cells
