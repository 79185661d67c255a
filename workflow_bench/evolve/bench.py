"""The benchmark of one generation: the runner as a subprocess, then the gate's verdict, then apply.

``runner_argv`` is the exact command (``--dry-run`` prints it): the incumbent/candidate pairs,
``--candidate-overlay`` = the frozen overlay, ``--reuse-results`` = the previous generation's
bench (or the seed), so generation N pays only candidate cells plus one canary per incumbent
arm. Credentials never enter argv: the runner reads them from the ``WORKFLOW_BENCH_*``
variables of a minimal environment (``runner_environment``).

After the runner: ``promotion.json`` is re-verified from its rows (``verify_promotion``, the
same check as ``promotion verify``), its overlay digest must equal the frozen one, and its task
bindings must equal those resolved before generation 0 (a moving branch cannot change later
evidence). ``--apply`` goes through ``apply_promotion`` (verification, default policy, every
arm ``promote``, compare-and-swap on the target) after the frozen overlay is re-checked.
"""

from __future__ import annotations

import os
import shlex
import sys
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from workflow_bench.argtypes import Flag
from workflow_bench.process import run_process
from workflow_bench.promotion.apply import ApplyError, apply_promotion
from workflow_bench.promotion.verify import VerifyError, verify_promotion
from workflow_bench.runner_args import RunnerFlags

from .args import EvolveConfig

ENV_ALLOWLIST = ("PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR", "XDG_CACHE_HOME", "CI", "TZ")
ENV_PREFIX = "WORKFLOW_BENCH_"
MAX_RUNNER_STDOUT = 64 * 1024 * 1024


class BenchError(RuntimeError):
    """The benchmark did not produce verified evidence: the generation fails (exit 1)."""


@dataclass(frozen=True, slots=True)
class BenchVerdict:
    promoted: bool
    lines: tuple[str, ...]
    """One line per decision with its reasons."""


# The runner's argv, declared: (the value's name, the runner flag it becomes), in argv order. A name
# is an ``EvolveConfig`` field, or one of the generation's own values (``GENERATION_VALUES``). The
# flag is the runner's own declaration, so a rename or a bound there is a change here too; a test
# re-parses the argv with the runner's parser and checks every value arrives.
RUNNER_ARGV: tuple[tuple[str, Flag], ...] = (
    ("tasks", RunnerFlags.tasks),
    ("probes", RunnerFlags.probes),
    ("runs", RunnerFlags.runs),
    ("workers", RunnerFlags.workers),
    ("arms", RunnerFlags.arms),  # the incumbent/candidate pairs (EvolveConfig.arms)
    ("overlay", RunnerFlags.candidate_overlay),
    ("origin", RunnerFlags.candidate_origin),
    ("out", RunnerFlags.out),
    ("toolkit", RunnerFlags.toolkit),
    ("provider", RunnerFlags.provider),
    ("script", RunnerFlags.script),
    ("model", RunnerFlags.model),
    ("effort", RunnerFlags.effort),
    ("base_url", RunnerFlags.base_url),
    ("claude_bin", RunnerFlags.claude_bin),
    ("include_expensive", RunnerFlags.include_expensive),
    ("reuse", RunnerFlags.reuse_results),
)
GENERATION_VALUES = frozenset({"overlay", "origin", "out", "reuse"})


def runner_argv(
    config: EvolveConfig, *, overlay: Path, out: Path, reuse: Path | None, origin: str
) -> list[str]:
    """The runner command of one generation: ``RUNNER_ARGV``, then the ``--promotion-*`` flags given."""
    generation = {"overlay": overlay, "origin": origin, "out": out, "reuse": reuse}
    argv = [sys.executable, "-m", "workflow_bench.runner"]
    for name, flag in RUNNER_ARGV:
        argv += flag.argv(generation[name] if name in GENERATION_VALUES else getattr(config, name))
    for name, value in config.promotion_flags:
        argv += [name, value]
    return argv


def shell_line(argv: Sequence[str]) -> str:
    return " ".join(shlex.quote(a) for a in argv)


def runner_environment(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The runner's environment: an allowlist plus the harness's own variables (credentials too)."""
    env = os.environ if env is None else env
    out = {k: env[k] for k in ENV_ALLOWLIST if k in env}
    out.update({k: v for k, v in env.items() if k.startswith(ENV_PREFIX)})
    out.update(PYTHONUNBUFFERED="1", GIT_TERMINAL_PROMPT="0")
    return out


def run_bench(argv: Sequence[str], *, timeout_s: float, cancel: threading.Event | None = None) -> int:
    """Run the runner, echoing its output live; returns its exit code (BenchError if it never exited).

    ``cancel`` (set by SIGINT/SIGTERM) sends the runner's group SIGTERM, so it records its in-flight
    cells as cancelled, then SIGKILL after ``process.TERMINATE_GRACE_S``; every row it had already
    written is fsynced and stays.
    """

    def echo(line: bytes) -> None:
        text = line.decode("utf-8", "replace")
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
        sys.stdout.flush()

    result = run_process(
        argv,
        timeout_s=timeout_s,
        env=runner_environment(),
        max_stdout_bytes=MAX_RUNNER_STDOUT,
        on_stdout_line=echo,
        cancel=cancel,
    )
    if result.stderr_tail.strip():
        sys.stderr.write(result.stderr_tail[-4000:].rstrip() + "\n")
    if result.state == "cancelled":
        raise KeyboardInterrupt("benchmark cancelled")
    if result.state != "exited" or result.returncode is None:
        raise BenchError(f"runner did not finish: {result.describe()}")
    return result.returncode


def gate_verdict(
    bench: Path,
    *,
    overlay_digest: str,
    pinned_tasks: Sequence[Mapping[str, Any]],
    now: datetime | None = None,
) -> BenchVerdict:
    """Verify ``bench/promotion.json`` and read its decision; BenchError when it cannot be trusted."""
    try:
        doc = verify_promotion(bench, now=now or datetime.now(UTC))  # every decision recomputed
    except VerifyError as exc:
        raise BenchError(f"promotion.json does not verify: {exc}") from exc
    recorded = None if doc.candidate_overlay is None else doc.candidate_overlay.digest
    if recorded != overlay_digest:
        raise BenchError(f"the benchmark ran overlay {recorded}, not the frozen {overlay_digest}")
    if [dict(t) for t in doc.selected_tasks] != [dict(t) for t in pinned_tasks]:
        raise BenchError("task bindings differ from those resolved before generation 0 (a moving ref?)")
    lines = []
    for decision in doc.decisions:
        reasons = "; ".join(decision.reasons) or "no reasons given"
        lines.append(f"{decision.candidate_arm} vs {decision.incumbent_arm}: {decision.decision} — {reasons}")
    verdicts = {d.candidate_arm: d.decision for d in doc.decisions}
    promoted = (
        doc.run_status == "complete"
        and sorted(verdicts) == sorted(doc.required_candidate_arms)
        and set(verdicts.values()) == {"promote"}
    )
    return BenchVerdict(promoted=promoted, lines=tuple(lines))


def apply_to(bench: Path, *, target: Path) -> list[Path]:
    try:
        return apply_promotion(bench, target=target, now=datetime.now(UTC))
    except ApplyError as exc:
        raise BenchError(f"promotion apply refused: {exc}") from exc
