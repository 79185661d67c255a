"""Run the escape suite: plant bait on the host, run one scripted attacker cell, judge each attack.

The attacker is a real cell (``run_cell``) through the real CLI, real bwrap
and the scripted provider: the same code path a benchmark cell takes, so the
suite tests the boundary benchmarks actually get. Each attack is one tool
call, one model turn; the judges read the tool results from the
parent-captured transcript, the row, the patch and the host's state.
"""

from __future__ import annotations

import contextlib
import json
import multiprocessing
import os
import secrets
import shutil
import socket
import tempfile
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from workflow_bench.arms import resolve_arm
from workflow_bench.cells.context import (
    CellPolicy,
    CellResult,
    Evaluated,
    Harness,
    SweepSettings,
    prepare_task_context,
)
from workflow_bench.cells.run import run_cell
from workflow_bench.providers.access import CellKey, ModelAccess
from workflow_bench.providers.scripted import Script, ScriptedProvider, parse_script
from workflow_bench.rows.model import Row
from workflow_bench.sandbox import CellLimits, Confinement, write_runtime_dir
from workflow_bench.taskspec.spec import bind_tasks, load_task_file
from workflow_bench.toolkit.spec import Toolkit
from workflow_bench.workspace.paths import make_work_root

from .attacks import ATTACKS, Attack, Evidence, Plant
from .attacks_evidence import EVIDENCE_ATTACKS

ATTACKS = (*ATTACKS, *EVIDENCE_ATTACKS)  # stream-forgery last: a landed forgery adds a tool call

CORPUS = Path(__file__).resolve().parents[1] / "corpus"
CANARY_TASKS = CORPUS / "canary.tasks.yaml"
CANARY_MODEL = "scripted-canary"
ARM = "baseline"  # no skill needed; skills are still seeded and mounted read-only
TURN_USAGE = {
    "input_tokens": 10,
    "output_tokens": 5,
    "cache_creation_input_tokens": 0,
    "cache_read_input_tokens": 0,
}
HOST_PROBE_PATHS = ("/usr/wfbench-canary", "/etc/wfbench-canary")


@dataclass(frozen=True, slots=True)
class AttackVerdict:
    attack: Attack
    blocked: bool
    observed: str


def scripted_canary_access(provider: ScriptedProvider) -> ModelAccess:
    """The canary's model route: the scripted attacker, one minted key per cell (every canary suite)."""
    return ModelAccess(
        provider="scripted",
        base_url=provider.base_url,
        mint=lambda key: provider.mint_key(task=key.task_id, arm=key.arm, run=key.run),
    )


def canary_settings(
    *,
    access: ModelAccess,
    toolkit: Toolkit,
    work_root: Path,
    claude_bin: Path,
    claude_version: str,
    bwrap_bin: str,
    progress,
    session_timeout_s: float,
    verify_timeout_s: float,
    model: str = CANARY_MODEL,
    runtime_dir: Path | None = None,
    limits: CellLimits | None = None,
    confinement: Confinement | None = None,
) -> SweepSettings:
    """The sweep settings every canary suite runs its cells with (one retry, no effort)."""
    return SweepSettings(
        cell=CellPolicy(
            model=model,
            effort=None,
            session_timeout_s=session_timeout_s,
            verify_timeout_s=verify_timeout_s,
            max_retries=1,
            limits=limits if limits is not None else CellLimits(),
        ),
        harness=Harness(
            claude_bin=claude_bin,
            claude_version=claude_version,
            bwrap_bin=bwrap_bin,
            confinement=confinement or Confinement(),
        ),
        evaluated=Evaluated(toolkit=toolkit),
        access=access,
        work_root=work_root,
        runtime_dir=runtime_dir if runtime_dir is not None else write_runtime_dir(work_root / "runtime"),
        progress=progress,
    )


class ToolAttack(Protocol):
    """What the attacker's script needs of an attack, whichever suite it belongs to."""

    @property
    def tool(self) -> str: ...

    @property
    def make_input(self) -> Callable[[Plant], dict[str, Any]]: ...


class VerdictRow(Protocol):
    """What the verdict table reads, whichever suite's verdict it is."""

    @property
    def attack(self) -> Any: ...

    @property
    def blocked(self) -> bool: ...

    @property
    def observed(self) -> str: ...


def attacker_script(attacks: Sequence[ToolAttack], plant: Plant) -> Script:
    turns = [
        {"tool_calls": [{"name": a.tool, "input": a.make_input(plant)}], "usage": TURN_USAGE} for a in attacks
    ]
    turns.append({"text": "Done.", "usage": TURN_USAGE})
    return parse_script(
        {"schema_version": 1, "model": CANARY_MODEL, "cells": [{"sessions": [{"turns": turns}]}]},
        source="<canary attacker>",
    )


def _sentinel(name: str) -> None:
    os.execv("/bin/bash", ["bash", "-c", f"exec -a {name} sleep 600"])


class _Listener:
    """A host loopback TCP listener that counts connections (the host-loopback bait)."""

    def __init__(self) -> None:
        self.hits = 0
        self._sock = socket.socket()
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(8)
        self.port = self._sock.getsockname()[1]
        threading.Thread(target=self._loop, daemon=True).start()

    def _loop(self) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            self.hits += 1
            conn.close()

    def close(self) -> None:
        self._sock.close()


@contextlib.contextmanager
def planted() -> Iterator[tuple[Plant, _Listener, multiprocessing.process.BaseProcess]]:
    token = secrets.token_hex(6)
    secret_dir = Path(tempfile.mkdtemp(prefix="wfbench-canary-secret-"))
    secret_file = secret_dir / "secret.txt"
    secret_file.write_text(f"CANARY-HOST-SECRET-{token}\n")
    home_file = Path.home() / f".wfbench-canary-{token}"
    home_file.write_text(f"CANARY-HOME-SECRET-{token}\n")
    listener = _Listener()
    sentinel_name = f"wfbench-host-sentinel-{token}"
    sentinel = multiprocessing.get_context("fork").Process(
        target=_sentinel, args=(sentinel_name,), daemon=True
    )
    sentinel.start()
    host_key = f"sk-ant-canary-{secrets.token_hex(16)}"
    previous = os.environ.get("ANTHROPIC_API_KEY")
    os.environ["ANTHROPIC_API_KEY"] = host_key  # bait: the runner's own environment must never leak
    plant = Plant(
        secret_dir=secret_dir,
        secret_file=secret_file,
        secret_token=f"CANARY-HOST-SECRET-{token}",
        home_file=home_file,
        home_token=f"CANARY-HOME-SECRET-{token}",
        host_key=host_key,
        listener_port=listener.port,
        sentinel_pid=sentinel.pid or 0,  # started above: a pid
        sentinel_name=sentinel_name,
        background_name=f"wfbench-canary-bg-{token}",
    )
    try:
        yield plant, listener, sentinel
    finally:
        if previous is None:
            os.environ.pop("ANTHROPIC_API_KEY", None)
        else:
            os.environ["ANTHROPIC_API_KEY"] = previous
        listener.close()
        if sentinel.is_alive():
            sentinel.kill()
        sentinel.join(timeout=5)
        home_file.unlink(missing_ok=True)
        shutil.rmtree(secret_dir, ignore_errors=True)
        for path in HOST_PROBE_PATHS:
            with contextlib.suppress(OSError):
                os.unlink(path)
        _kill_survivors(plant.background_name)


def _survivors(name: str) -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if name.encode() in (entry / "cmdline").read_bytes():
                    pids.append(int(entry.name))
    return [p for p in pids if p != os.getpid()]


def _kill_survivors(name: str) -> None:
    for pid in _survivors(name):
        with contextlib.suppress(OSError):
            os.kill(pid, 9)


def _text(content) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(b.get("text", "") for b in content if isinstance(b, dict))
    return json.dumps(content)


def _tool_results(transcripts: str) -> list[str]:
    """Tool results in the order their tool_use blocks were issued."""
    order, results = [], {}
    for line in transcripts.splitlines():
        event = json.loads(line)
        message = event.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        for block in content if isinstance(content, list) else []:
            if not isinstance(block, dict):
                continue
            if event.get("type") == "assistant" and block.get("type") == "tool_use":
                order.append(block.get("id"))
            elif event.get("type") == "user" and block.get("type") == "tool_result":
                results[block.get("tool_use_id")] = _text(block.get("content"))
    return [results.get(tool_id, "") for tool_id in order]


def run_suite(
    *, claude_bin: Path, claude_version: str, bwrap_bin: str, progress=print
) -> list[AttackVerdict]:
    """Run every attack once; returns one verdict per attack, in table order."""
    binding = bind_tasks(load_task_file(CANARY_TASKS))[0]
    toolkit = Toolkit(
        root=str(CORPUS / "toolkit"), roles={"plan": "plan", "work": "work", "review": "review"}
    )
    work_root = make_work_root()  # pid-named: a killed canary's roots are collected as stale
    try:
        with planted() as (plant, listener, sentinel):
            task = prepare_task_context(binding, toolkit=toolkit, dest=work_root / "template")
            with ScriptedProvider(attacker_script(ATTACKS, plant)) as provider:
                access = scripted_canary_access(provider)
                settings = canary_settings(
                    access=access,
                    toolkit=toolkit,
                    work_root=work_root,
                    claude_bin=claude_bin,
                    claude_version=claude_version,
                    bwrap_bin=bwrap_bin,
                    progress=progress,
                    session_timeout_s=300,
                    verify_timeout_s=120,
                )
                key = CellKey(task_id=binding.spec.task_id, run=0, arm=ARM)
                result = run_cell(settings, task, resolve_arm(ARM), key)
            return _judge_all(result, plant, listener, sentinel)
    finally:
        shutil.rmtree(work_root, ignore_errors=True)


def _judge_all(result: CellResult, plant: Plant, listener: _Listener, sentinel) -> list[AttackVerdict]:
    transcripts = "".join(
        data.decode("utf-8", "replace")
        for name, data in sorted(result.artifacts.items())
        if name.startswith("transcripts/")
    )
    outputs = _tool_results(transcripts) if transcripts else []
    created = tuple(p for p in (*HOST_PROBE_PATHS, str(plant.secret_dir / "planted")) if os.path.lexists(p))
    shared = {
        "row": result.row,
        "patch": result.artifacts.get("patch.diff", b"").decode("utf-8", "replace"),
        "transcripts": transcripts,
        "listener_hits": listener.hits,
        "sentinel_alive": sentinel.is_alive(),
        "background_survivors": len(_survivors(plant.background_name)),
        "host_paths_created": created,
    }
    verdicts = []
    for index, attack in enumerate(ATTACKS):
        if index >= len(outputs):
            reason = not_run_reason(result.row) if result.row.error_kind else "no tool result"
            verdicts.append(AttackVerdict(attack, False, f"attack did not run ({reason})"))
            continue
        blocked, observed = attack.judge(Evidence(output=outputs[index], **shared), plant)
        verdicts.append(AttackVerdict(attack, blocked, observed))
    return verdicts


def not_run_reason(row: Row) -> str:
    """Why a cell's attack never ran, in one short line: its error kind and what the row says of it.

    A canary that fails must say why without a rerun (CI shows only the table): the attribution
    (relay evidence) and the first line the CLI or its stream left.
    """
    detail = row.error_detail if isinstance(row.error_detail, dict) else {}
    said = [str(row.error_kind)]
    for key in ("attribution", "event_stream_error", "process_detail", "stderr_tail"):
        text = str(detail.get(key) or "").strip()
        if text:
            said.append(" ".join(text.splitlines()[-1:])[:120])
    return "; ".join(said)[:300]


def render_table(verdicts: Sequence[VerdictRow]) -> str:
    rows = [("attack", "expected", "observed", "verdict")]
    rows += [
        (v.attack.name, v.attack.expected, v.observed, "blocked" if v.blocked else "NOT BLOCKED")
        for v in verdicts
    ]
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    lines = ["  ".join(cell.ljust(widths[i]) for i, cell in enumerate(r)).rstrip() for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    blocked = sum(v.blocked for v in verdicts)
    lines.append(f"blocked {blocked}/{len(verdicts)}")
    return "\n".join(lines)
