"""The runner's flags, each declared once (``RunnerFlags``), and its parser built from groups of them.
Over 400 lines on purpose: every runner flag's one declaration (type, bound, default, help) is one table.

Owns argv syntax only: flag names, defaults, help text and the bounded argparse types
(``argtypes``) that refuse a malformed single value (a count out of range, an unknown arm).
``RunnerFlags`` is the one declaration of every runner flag: the parser's groups add them here,
and the evolve driver adds the ones it shares (``evolve.args``) and builds the runner's argv from
them (``evolve.bench.RUNNER_FLAGS``), so a bound or a name cannot drift between the two. Checks
that span several flags or read files live beside the types they validate
(``ProviderOptions.validate``, ``candidate_overlay``, ``load_toolkit``) and run in
``sweep.prepare``.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from workflow_bench import argtypes

from .argtypes import Flag, bounded_int, positive_float, positive_int
from .arms import ARMS, DEFAULT_ARMS, UnknownArmError, resolve_arm
from .promotion.flags import add_promotion_arguments
from .providers.options import ANTHROPIC_KEY_ENV, AUTH_TOKEN_ENV, OPENAI_KEY_ENV
from .sandbox import (
    DEFAULT_DISK_MIB,
    DEFAULT_MEMORY_MIB,
    DEFAULT_PIDS,
    MIN_DISK_MIB,
    MIN_MEMORY_MIB,
    MIN_PIDS,
)
from .schedule.order import ORDERS
from .schedule.pool import DEFAULT_OUTAGE_STREAK, MAX_WORKERS, PACKED_WINDOW_MULTIPLIER, SCHEDULERS
from .schedule.ray_cells import EXECUTORS
from .schedule.ray_cells import RESOURCE as RAY_RESOURCE

CORPUS_DIR = Path(__file__).resolve().parent / "corpus"
DEMO_SCRIPT = CORPUS_DIR / "scripts" / "demo.yaml"
EFFORTS = ("low", "medium", "high", "xhigh", "max")
# 5400 s: the reference raised its session ceiling from 3600 after paid runs
# lost incumbent cells to it.
DEFAULT_SESSION_TIMEOUT_S = 5400
DEFAULT_VERIFY_TIMEOUT_S = 600
DEFAULT_MAX_RETRIES = 3


# Upper bounds on numeric flags: a typo (--runs 10000000) must exit 2, not plan ten million
# cells in memory. Each bound is far above any sane sweep: the reference runs 3-5 repetitions;
# a session or verify longer than a day is a hang; CLI retries past 20 only delay an outage; an
# outage streak longer than 1000 cells never trips.
MAX_RUNS = 100
MAX_TIMEOUT_S = 86_400
MAX_RETRIES = 20
MAX_OUTAGE_STREAK = 1000
_HOST_MEMORY_MIB = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // (1024 * 1024)


def _arm(value: str) -> str:
    try:
        return resolve_arm(value).name
    except UnknownArmError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


def _cpus(text: str) -> float:
    """A number of cores for ``--cell-cpus``: 0 (no bound) or 0.01..4096."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"want a number of cores, got {text!r}") from None
    if not (value == 0 or 0.01 <= value <= 4096):
        raise argparse.ArgumentTypeError(f"want 0 (no bound) or 0.01..4096 cores, got {text}")
    return value


def default_cell_cpus(workers: int) -> float:
    """The fair share: this host's cores over the cells that run at once, at least one core."""
    return max(1.0, round((os.cpu_count() or 1) / max(1, workers), 2))


class RunnerFlags:
    """Every runner flag, declared once (name, type with its bounds, default, help)."""

    tasks = Flag(
        "--tasks", dict(required=True, type=Path, help="task file (YAML), e.g. tasks.scenarios.yaml")
    )
    probes = Flag(
        "--probes",
        dict(
            type=Path,
            help="a file of impossible tasks (cheating probes, e.g. tasks.probes.yaml) run beside --tasks; "
            "every task in it must declare impossible: true (README, Cheating probes)",
        ),
    )
    runs = Flag(
        "--runs",
        dict(
            type=bounded_int(1, MAX_RUNS),
            default=1,
            help=f"repetitions per task × arm, 1..{MAX_RUNS} (default 1)",
        ),
    )
    workers = Flag(
        "--workers",
        dict(
            type=bounded_int(1, MAX_WORKERS),
            default=1,
            help=f"cells in parallel, 1..{MAX_WORKERS} (default 1)",
        ),
    )
    arms = Flag(
        "--arms",
        dict(
            nargs="+",
            type=_arm,
            default=list(DEFAULT_ARMS),
            metavar="ARM",
            help=f"arms to run (default: {' '.join(DEFAULT_ARMS)}; known: {', '.join(ARMS)})",
        ),
    )
    out = Flag("--out", dict(type=Path, help="output directory (default results/wfbench-<UTC timestamp>/)"))
    include_expensive = Flag(
        "--include-expensive", dict(action="store_true", help="also run tasks marked expensive: true")
    )
    provider = Flag(
        "--provider",
        dict(
            choices=("anthropic", "scripted"),
            default="anthropic",
            help="anthropic: a real Anthropic(-compatible) endpoint; scripted: the embedded scripted model "
            "(offline)",
        ),
    )
    script = Flag("--script", dict(type=Path, help=f"scripted provider script (default: {DEMO_SCRIPT.name})"))
    model = Flag("--model", dict(help="model id (default for --provider scripted: the script's model)"))
    effort = Flag(
        "--effort", dict(choices=EFFORTS, help="Claude Code --effort level (default: the CLI's own)")
    )
    timeout = Flag(
        "--timeout",
        dict(
            type=bounded_int(1, MAX_TIMEOUT_S),
            default=DEFAULT_SESSION_TIMEOUT_S,
            help=f"per-session timeout, s, 1..{MAX_TIMEOUT_S} (5400)",
        ),
    )
    verify_timeout = Flag(
        "--verify-timeout",
        dict(
            type=bounded_int(1, MAX_TIMEOUT_S),
            default=DEFAULT_VERIFY_TIMEOUT_S,
            help=f"verify/oracle timeout, s, 1..{MAX_TIMEOUT_S} (600)",
        ),
    )
    max_retries = Flag(
        "--max-retries",
        dict(
            type=bounded_int(0, MAX_RETRIES),
            default=DEFAULT_MAX_RETRIES,
            help=f"CLI API retries per request, 0..{MAX_RETRIES} (3)",
        ),
    )
    outage_streak = Flag(
        "--outage-streak",
        dict(
            type=bounded_int(0, MAX_OUTAGE_STREAK),
            default=DEFAULT_OUTAGE_STREAK,
            help=f"abort after this many consecutive systemic failures, 0..{MAX_OUTAGE_STREAK} "
            "(0 disables; default 5)",
        ),
    )
    cell_memory_mib = Flag(
        "--cell-memory-mib",
        dict(
            type=bounded_int(MIN_MEMORY_MIB, max(MIN_MEMORY_MIB, _HOST_MEMORY_MIB), "MiB"),
            default=DEFAULT_MEMORY_MIB,
            help=f"memory limit per cell, all its processes together (cgroup; default {DEFAULT_MEMORY_MIB})",
        ),
    )
    cell_pids = Flag(
        "--cell-pids",
        dict(
            type=bounded_int(MIN_PIDS, 1 << 20, "processes"),
            default=DEFAULT_PIDS,
            help=f"process/thread limit per cell (cgroup; default {DEFAULT_PIDS})",
        ),
    )
    cell_cpus = Flag(
        "--cell-cpus",
        dict(
            type=_cpus,
            default=None,
            help="CPU quota per cell in cores, all its processes together (cgroup; default: host cores / "
            "--workers, at least 1, so a cell's durations do not depend on its neighbours; 0: no bound)",
        ),
    )
    cell_disk_mib = Flag(
        "--cell-disk-mib",
        dict(
            type=bounded_int(MIN_DISK_MIB, 1 << 24, "MiB"),
            default=DEFAULT_DISK_MIB,
            help=f"disk a cell may write on top of its clone (own volume; default {DEFAULT_DISK_MIB})",
        ),
    )
    scheduler = Flag(
        "--scheduler",
        dict(
            choices=SCHEDULERS,
            default="packed",
            help="packed: one pool across tasks, bounded by --window (less idle time); waves: one task at a "
            "time in waves of --workers (idles on each wave's slowest cell; overrun ≤ workers−1); default "
            "packed",
        ),
    )
    window = Flag(
        "--window",
        dict(
            type=positive_int,
            help=f"packed: a cell starts only while fewer than WINDOW cells ahead of the in-order fold; "
            "larger "
            f"is faster but wastes up to WINDOW−1 paid cells after an outage (default "
            f"{PACKED_WINDOW_MULTIPLIER}"
            "×workers, never below workers)",
        ),
    )
    order = Flag(
        "--order",
        dict(
            choices=ORDERS,
            default="plan",
            help="packed: which allowed cell starts first; longest-first predicts each cell's wall from "
            "prior "
            "rows (--resume/--reuse-results) or the task's expensive flag, so long cells do not trail; rows "
            "and the breaker still fold in plan order (default plan)",
        ),
    )
    max_cost_usd = Flag(
        "--max-cost-usd",
        dict(
            type=positive_float,
            metavar="X",
            help="stop starting cells once spent + the arm's median cell cost would pass X (unknown costs "
            "are "
            "estimated, never 0); ends the sweep as aborted, exit 1",
        ),
    )
    max_runtime = Flag(
        "--max-runtime",
        dict(
            type=positive_float,
            metavar="S",
            help="start no cell more than S seconds after the sweep began; running cells finish; aborted, "
            "exit 1",
        ),
    )
    executor = Flag(
        "--executor",
        dict(
            choices=EXECUTORS,
            default="threads",
            help="where cells run: threads in this process, or ray: one Ray task per cell on nodes "
            "advertising "
            f"the {RAY_RESOURCE} resource; with a loopback model upstream (scripted provider, local gateway) "
            "every such node must be this machine, checked before any cell (README: Ray) (default threads)",
        ),
    )
    ray_address = Flag(
        "--ray-address",
        dict(
            metavar="HOST:PORT",
            help="--executor ray: join the Ray cluster whose head listens at HOST:PORT (e.g. 127.0.0.1:6390) "
            "instead of starting and stopping a private local instance; no head answering within 5 s "
            "(connect) + 60 s (join) is exit 2",
        ),
    )
    resume = Flag(
        "--resume",
        dict(
            type=Path,
            metavar="DIR",
            help="continue an interrupted sweep in DIR in place: the same arguments are required (checked "
            "against DIR/sweep.lock.json, exit 2 naming what differs); finished cells whose transcripts "
            "still "
            "match their sha256 are kept, the rest run",
        ),
    )
    reuse_results = Flag(
        "--reuse-results",
        dict(
            type=Path,
            metavar="DIR",
            help="copy clean incumbent/comparator rows of an earlier sweep in DIR instead of paying for them "
            "when every reuse condition holds (README: Scheduling); candidate arms are always paid, and one "
            "cell "
            "per fully reusable arm is paid as a canary",
        ),
    )
    claude_bin = Flag(
        "--claude-bin", dict(help="Claude Code binary (default: the pinned version installed by ./dev)")
    )
    bwrap_bin = Flag("--bwrap-bin", dict(default="bwrap", help=argparse.SUPPRESS))
    unsafe_no_bwrap = Flag("--unsafe-no-bwrap", dict(action="store_true", help=argparse.SUPPRESS))
    base_url = Flag(
        "--base-url", dict(help="Anthropic-compatible endpoint (default https://api.anthropic.com)")
    )
    anthropic_api_key = Flag(
        "--anthropic-api-key",
        dict(help=f"API key (default: ${ANTHROPIC_KEY_ENV}); reaches only the CLI process"),
    )
    auth_token = Flag(
        "--auth-token", dict(help=f"bearer token instead of an API key (default: ${AUTH_TOKEN_ENV})")
    )
    openai_api_key = Flag(
        "--openai-api-key",
        dict(
            help=f"OpenAI key (default: ${OPENAI_KEY_ENV}) for OpenAI model ids (openai/…, gpt-…, chatgpt-…, "
            "o<digit>…): they run through a loopback LiteLLM gateway that alone holds the key"
        ),
    )
    via_gateway = Flag(
        "--via-gateway",
        dict(
            action="store_true",
            help="with --provider scripted: route the CLI through a real LiteLLM proxy to the scripted "
            "provider speaking OpenAI Responses (offline)",
        ),
    )
    toolkit = Flag(
        "--toolkit",
        dict(
            default="demo",
            metavar="DIR|NAME",
            help="toolkit directory holding a toolkit.yaml (skills per role, MCP servers, index step), or a "
            "shipped toolkit name: demo (default)",
        ),
    )
    candidate_overlay = Flag(
        "--candidate-overlay",
        dict(
            type=Path,
            help="candidate skill overlay dir (Markdown under skills/<skill>/); requires exactly the paired "
            "arms "
            "its skills imply (e.g. review: ce_review review candidate_review)",
        ),
    )
    candidate_origin = Flag(
        "--candidate-origin",
        dict(
            choices=("manual-initial-overlay", "model-proposer"),
            help="who wrote --candidate-overlay, recorded in sweep.json and promotion.json (default "
            "manual-initial-overlay; the evolve driver passes model-proposer for a proposer's overlay)",
        ),
    )
    ce_plugin_dir = Flag(
        "--ce-plugin-dir", dict(type=Path, help="external comparator plugin dir (ce_* arms)")
    )
    ce_plugin_version = Flag(
        "--ce-plugin-version", dict(help="the comparator plugin's exact version (must match its manifest)")
    )
    check_tasks = Flag(
        "--check-tasks",
        dict(
            action="store_true",
            help="only self-check the task file (python -m workflow_bench.tasks check): base fails, "
            "reference "
            "patch passes, 3 repeats; exit 1 if a task cannot discriminate",
        ),
    )
    dry_run = Flag(
        "--dry-run",
        dict(
            action="store_true",
            help="validate everything and print the plan (cells, rows kept by --resume or reused from "
            "--reuse-results, start priorities), then exit 0: no session, no --out written",
        ),
    )
    canary = Flag(
        "--canary",
        dict(
            action="store_true",
            help="run the containment escape suite first; exit 2 without sweeping unless every attack is "
            "blocked",
        ),
    )


# The groups, in the order of --help (keep it when adding a group); each a tuple of flags.
# What to run: tasks, runs, parallelism, arms, where results go.
SWEEP_SHAPE = (
    RunnerFlags.tasks,
    RunnerFlags.probes,
    RunnerFlags.runs,
    RunnerFlags.workers,
    RunnerFlags.arms,
    RunnerFlags.out,
    RunnerFlags.include_expensive,
)
# Which provider and model, and how hard it thinks.
MODEL_CHOICE = (
    RunnerFlags.provider,
    RunnerFlags.script,
    RunnerFlags.model,
    RunnerFlags.effort,
)
# Timeouts, retries, the outage breaker and the per-cell kernel bounds (sandbox/_limits.py).
LIMITS = (
    RunnerFlags.timeout,
    RunnerFlags.verify_timeout,
    RunnerFlags.max_retries,
    RunnerFlags.outage_streak,
    RunnerFlags.cell_memory_mib,
    RunnerFlags.cell_pids,
    RunnerFlags.cell_cpus,
    RunnerFlags.cell_disk_mib,
)
# How cells are scheduled, when a sweep stops early, and what it may skip (README: Scheduling).
SCHEDULING = (
    RunnerFlags.scheduler,
    RunnerFlags.window,
    RunnerFlags.order,
    RunnerFlags.max_cost_usd,
    RunnerFlags.max_runtime,
    RunnerFlags.executor,
    RunnerFlags.ray_address,
    RunnerFlags.resume,
    RunnerFlags.reuse_results,
)
# The Claude Code CLI and the sandbox backend (the last two are for tests only).
BINARIES = (
    RunnerFlags.claude_bin,
    RunnerFlags.bwrap_bin,
    RunnerFlags.unsafe_no_bwrap,
)
# Endpoint and credentials; they reach only the CLI process or the gateway, never a tool.
CREDENTIALS = (
    RunnerFlags.base_url,
    RunnerFlags.anthropic_api_key,
    RunnerFlags.auth_token,
    RunnerFlags.openai_api_key,
    RunnerFlags.via_gateway,
)
# The evaluated toolkit, a candidate overlay, the external comparator plugin.
SKILLS = (
    RunnerFlags.toolkit,
    RunnerFlags.candidate_overlay,
    RunnerFlags.candidate_origin,
    RunnerFlags.ce_plugin_dir,
    RunnerFlags.ce_plugin_version,
)
SAFETY = (
    RunnerFlags.check_tasks,
    RunnerFlags.dry_run,
    RunnerFlags.canary,
)
GROUPS = (SWEEP_SHAPE, MODEL_CHOICE, LIMITS, SCHEDULING, BINARIES, CREDENTIALS, SKILLS)


def build_parser(*, description: str | None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=argtypes.prog("runner"),
        description=description,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    for group in GROUPS:
        for flag in group:
            flag.add(parser)
    add_promotion_arguments(parser)
    for flag in SAFETY:
        flag.add(parser)
    return parser
