"""The loopback LiteLLM proxy for one sweep: config, supervised start, readiness, per-cell usage.

``Gateway`` owns a private temp dir (0700) holding the generated config and the hooks module
(0600 each), the proxy's log (0600, never a pipe) and its usage log. It starts
``litellm --config … --host 127.0.0.1 --port …`` under ``_supervisor`` so the proxy dies with the
runner even on SIGKILL, waits for ``/health/liveliness`` within a bound, and fails with a clear
error carrying the redacted log tail. Upstream credentials (the OpenAI key) go only into the
proxy's environment; the sandbox gets a per-cell key from ``mint_key`` and the base URL.

It never decides what a row says: ``cell_records`` hands back the usage-log lines of one cell,
and the caller normalizes them (``_usage``).
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType, TracebackType
from typing import Any

import yaml

from workflow_bench.process import ManagedProcess, spawn_group
from workflow_bench.providers.gateway._keys import ENV_FORWARD_CELL, ENV_SECRET, ENV_USAGE_LOG, mint_cell_key
from workflow_bench.redaction import redact_text

HOOKS_MODULE = "wfbench_proxy_hooks"
# Copied, never imported here: it imports litellm (seconds of import time, and optional).
HOOKS_SOURCE = Path(__file__).with_name("_proxy_hooks.py")
# Reference value: a reasoning model's single request can run for many minutes; the CLI's own
# API_TIMEOUT_MS (the session timeout) still bounds the whole session.
UPSTREAM_TIMEOUT_S = 1800
# Startup measured at 5-12 s on 2 cores (import cost); 180 s is the reference bound, generous for
# a loaded CI machine. Overridable for slower hosts.
DEFAULT_READY_TIMEOUT_S = 180.0
READY_TIMEOUT_ENV = "WORKFLOW_BENCH_GATEWAY_READY_TIMEOUT_S"
# The callback runs after the response is sent (measured: milliseconds later); a cell is observed
# after verify and oracle have run, so this bound is only ever reached when a line never comes.
RECORDS_WAIT_S = 15.0
LOG_TAIL_CHARS = 3000
_POLL_S = 0.25


class GatewayError(RuntimeError):
    """The gateway could not be started or reached: a preflight failure, before any cell runs."""


@dataclass(frozen=True, slots=True)
class GatewayRoute:
    """One model name the CLI may send, and where the proxy sends it."""

    model_name: str
    """What the CLI sends as ``model`` (the runner's ``--model``)."""
    upstream_model: str
    """LiteLLM's model string, e.g. ``openai/gpt-5``."""
    api_base: str | None = None
    api_key_env: str | None = None
    """Proxy environment variable holding the upstream key (``None``: a placeholder the
    forwarding hook replaces per request)."""


@dataclass(frozen=True, slots=True)
class GatewaySpec:
    """Everything that shapes one proxy. ``upstream_env`` holds secrets for the proxy only."""

    routes: tuple[GatewayRoute, ...]
    upstream_env: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    forward_cell: bool = False
    """Send each cell's tag upstream as its API key (a scripted upstream that attributes by key)."""
    ready_timeout_s: float = DEFAULT_READY_TIMEOUT_S

    def __post_init__(self) -> None:
        if not self.routes:
            raise ValueError("a gateway needs at least one route")
        names = [r.model_name for r in self.routes]
        if len(set(names)) != len(names):
            raise ValueError(f"duplicate gateway model names: {names}")


def locate_litellm() -> Path:
    """The ``litellm`` console script of the runner's own virtualenv (the pinned release)."""
    candidate = Path(sys.executable).parent / "litellm"
    if candidate.is_file() and os.access(candidate, os.X_OK):
        return candidate
    raise GatewayError(
        f"litellm is not installed next to {sys.executable}; install the gateway extra: "
        "uv sync --locked --extra gateway"
    )


def proxy_config(spec: GatewaySpec) -> dict[str, Any]:
    """The LiteLLM config for ``spec`` (pure; written 0600 by ``Gateway``)."""
    models = []
    for route in spec.routes:
        params: dict[str, Any] = {
            "model": route.upstream_model,
            "api_key": f"os.environ/{route.api_key_env}" if route.api_key_env else "replaced-per-request",
            "timeout": UPSTREAM_TIMEOUT_S,
        }
        if route.api_base:
            params["api_base"] = route.api_base
        models.append({"model_name": route.model_name, "litellm_params": params})
    return {
        "model_list": models,
        "litellm_settings": {
            "drop_params": True,
            "request_timeout": UPSTREAM_TIMEOUT_S,
            # The CLI retries (CLAUDE_CODE_MAX_RETRIES); a second retry layer in the proxy would
            # multiply upstream calls behind one logged request.
            "num_retries": 0,
            "callbacks": [f"{HOOKS_MODULE}.handler"],
        },
        "router_settings": {"num_retries": 0},
        "general_settings": {
            "master_key": "os.environ/LITELLM_MASTER_KEY",
            "custom_auth": f"{HOOKS_MODULE}.user_api_key_auth",
        },
    }


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _write_private(path: Path, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)


class Gateway:
    """A running LiteLLM proxy on ``127.0.0.1``; a context manager. Thread-safe."""

    def __init__(self, spec: GatewaySpec) -> None:
        self.spec = spec
        self._secret = secrets.token_bytes(32)
        self._master_key = "sk-" + secrets.token_hex(24)
        self._dir = Path(tempfile.mkdtemp(prefix="wfbench-gateway-"))
        self._usage_log = self._dir / "usage.jsonl"
        self._proxy_log = self._dir / "proxy.log"
        self._port = _free_port()
        self.base_url = f"http://127.0.0.1:{self._port}"
        self._process: ManagedProcess | None = None
        self._lock = threading.Lock()
        self._offset = 0
        self._by_cell: dict[str, list[dict[str, Any]]] = {}

    # ---- lifecycle

    def __enter__(self) -> Gateway:
        try:
            self.start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    @property
    def secrets(self) -> tuple[str, ...]:
        """Values that must never be persisted: the master key and every upstream credential."""
        return (self._master_key, self._secret.hex(), *self.spec.upstream_env.values())

    def start(self) -> None:
        litellm = locate_litellm()
        config = self._dir / "config.yaml"
        _write_private(config, yaml.safe_dump(proxy_config(self.spec), sort_keys=False))
        _write_private(self._dir / f"{HOOKS_MODULE}.py", HOOKS_SOURCE.read_text())
        _write_private(self._usage_log, "")
        env = {
            "HOME": str(self._dir),
            "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin",
            "LANG": "C.UTF-8",
            "PYTHONUNBUFFERED": "1",
            "PYTHONDONTWRITEBYTECODE": "1",
            # Pricing from the locked release's bundled map; no fetch at import (offline here).
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
            "LITELLM_MASTER_KEY": self._master_key,
            ENV_SECRET: self._secret.hex(),
            ENV_USAGE_LOG: str(self._usage_log),
            ENV_FORWARD_CELL: "1" if self.spec.forward_cell else "0",
            **self.spec.upstream_env,
        }
        argv = [
            sys.executable,
            "-m",
            "workflow_bench.providers.gateway._supervisor",
            "--remove-dir",
            str(self._dir),
            str(litellm),
            "--config",
            str(config),
            "--host",
            "127.0.0.1",
            "--port",
            str(self._port),
        ]
        try:
            self._process = spawn_group(
                argv, env=env, cwd=self._dir, stdin_pipe=True, log_path=self._proxy_log
            )
        except OSError as exc:
            raise GatewayError(f"cannot start the LiteLLM proxy: {exc}") from exc
        self._wait_ready()

    def _ready_timeout_s(self) -> float:
        raw = os.environ.get(READY_TIMEOUT_ENV)
        try:
            return float(raw) if raw else self.spec.ready_timeout_s
        except ValueError as exc:
            raise GatewayError(f"${READY_TIMEOUT_ENV}={raw!r} is not a number of seconds") from exc

    def _wait_ready(self) -> None:
        timeout_s = self._ready_timeout_s()
        deadline = time.monotonic() + timeout_s
        url = f"{self.base_url}/health/liveliness"
        while time.monotonic() < deadline:
            assert self._process is not None
            code = self._process.poll()
            if code is not None:
                raise GatewayError(f"the LiteLLM proxy exited with {code} before it was ready{self._tail()}")
            try:
                with urllib.request.urlopen(url, timeout=2) as response:
                    if response.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(_POLL_S)
        raise GatewayError(f"the LiteLLM proxy was not ready within {timeout_s:.0f} s{self._tail()}")

    def _tail(self) -> str:
        try:
            text = self._proxy_log.read_text(encoding="utf-8", errors="replace")[-LOG_TAIL_CHARS:]
        except OSError:
            return ""
        return f"; proxy log tail:\n{redact_text(text, self.secrets)}" if text.strip() else ""

    def close(self) -> None:
        """Stop the proxy's supervisor (which takes the proxy's group down) and remove the dir."""
        if self._process is not None:
            self._process.close_stdin()
            if self._process.wait(10) is None:
                self._process.stop()
            self._process = None
        shutil.rmtree(self._dir, ignore_errors=True)

    @property
    def port(self) -> int:
        return self._port

    @property
    def private_dir(self) -> Path:
        """The 0700 dir holding the config, the hooks module and the logs (removed by ``close``)."""
        return self._dir

    # ---- cells

    def mint_key(self, tag: str | None = None) -> tuple[str, str]:
        """A fresh per-cell key and its tag (random unless given). The tag is what the log carries."""
        tag = tag or secrets.token_hex(12)
        return mint_cell_key(self._secret, tag), tag

    def _read_new(self) -> None:
        with open(self._usage_log, "rb") as handle:
            handle.seek(self._offset)
            data = handle.read()
        complete = data[: data.rfind(b"\n") + 1]
        self._offset += len(complete)
        for line in complete.decode("utf-8", "replace").splitlines():
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(record, dict) and isinstance(record.get("cell"), str):
                self._by_cell.setdefault(record["cell"], []).append(record)

    def cell_records(
        self, tag: str, *, wait_s: float = RECORDS_WAIT_S
    ) -> tuple[tuple[dict[str, Any], ...], bool]:
        """The usage-log lines of one cell and whether every request has its outcome line.

        Waits (bounded by ``wait_s``) until each ``request`` line has a ``success`` or
        ``failure`` line with the same ``call_id``.
        """
        deadline = time.monotonic() + wait_s
        while True:
            with self._lock:
                self._read_new()
                records = tuple(self._by_cell.get(tag, ()))
            requested = {r.get("call_id") for r in records if r.get("event") == "request"}
            finished = {r.get("call_id") for r in records if r.get("event") in ("success", "failure")}
            complete = requested <= finished
            if complete or time.monotonic() >= deadline:
                return records, complete
            time.sleep(_POLL_S)
