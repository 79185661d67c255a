"""The runner's argument parser, built from one small function per group of flags.

Owns argv syntax only: flag names, defaults, help text and the argparse types that refuse a
malformed single value (a count out of range, an unknown arm). Checks that span several flags
or read files live beside the types they validate (``ProviderOptions.validate``,
``candidate_overlay``, ``load_toolkit``) and run in ``runner.prepare``.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from .arms import ARMS, DEFAULT_ARMS, UnknownArmError, resolve_arm
from .providers.options import ANTHROPIC_KEY_ENV, AUTH_TOKEN_ENV, OPENAI_KEY_ENV
from .reports.promotion.flags import add_promotion_arguments
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


def _workers(value: str) -> int:
    workers = int(value)
    if not 1 <= workers <= MAX_WORKERS:
        raise argparse.ArgumentTypeError(f"must be between 1 and {MAX_WORKERS}")
    return workers


# Upper bounds on numeric flags: a typo (--runs 10000000) must exit 2, not plan ten million
# cells in memory. Each bound is far above any sane sweep: the reference runs 3-5 repetitions;
# a session or verify longer than a day is a hang; CLI retries past 20 only delay an outage; an
# outage streak longer than 1000 cells never trips.
MAX_RUNS = 100
MAX_TIMEOUT_S = 86_400
MAX_RETRIES = 20
MAX_OUTAGE_STREAK = 1000


def _positive_int(value: str) -> int:
    number = int(value)
    if number < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return number


def _bounded_int(low: int, high: int):
    def parse(value: str) -> int:
        number = int(value)
        if not low <= number <= high:
            raise argparse.ArgumentTypeError(f"must be between {low} and {high}, got {number}")
        return number

    return parse


def _positive_float(value: str) -> float:
    number = float(value)
    if not number > 0 or number == float("inf"):
        raise argparse.ArgumentTypeError("must be a positive number")
    return number


def _arm(value: str) -> str:
    try:
        return resolve_arm(value).name
    except UnknownArmError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


def _sweep_shape(parser: argparse.ArgumentParser) -> None:
    """What to run: tasks, runs, parallelism, arms, where results go."""
    parser.add_argument(
        "--tasks", required=True, type=Path, help="task file (YAML), e.g. tasks.scenarios.yaml"
    )
    parser.add_argument(
        "--runs",
        type=_bounded_int(1, MAX_RUNS),
        default=1,
        help=f"repetitions per task × arm, 1..{MAX_RUNS} (default 1)",
    )
    parser.add_argument(
        "--workers", type=_workers, default=1, help=f"cells in parallel, 1..{MAX_WORKERS} (default 1)"
    )
    parser.add_argument(
        "--arms",
        nargs="+",
        type=_arm,
        default=list(DEFAULT_ARMS),
        metavar="ARM",
        help=f"arms to run (default: {' '.join(DEFAULT_ARMS)}; known: {', '.join(ARMS)})",
    )
    parser.add_argument(
        "--out", type=Path, help="output directory (default results/wfbench-<UTC timestamp>/)"
    )
    parser.add_argument(
        "--include-expensive", action="store_true", help="also run tasks marked expensive: true"
    )


def _model_choice(parser: argparse.ArgumentParser) -> None:
    """Which provider and model, and how hard it thinks."""
    parser.add_argument(
        "--provider",
        choices=("anthropic", "scripted"),
        default="anthropic",
        help="anthropic: a real Anthropic(-compatible) endpoint; scripted: the embedded scripted model "
        "(offline)",
    )
    parser.add_argument("--script", type=Path, help=f"scripted provider script (default: {DEMO_SCRIPT.name})")
    parser.add_argument("--model", help="model id (default for --provider scripted: the script's model)")
    parser.add_argument(
        "--effort", choices=EFFORTS, help="Claude Code --effort level (default: the CLI's own)"
    )


def _limits(parser: argparse.ArgumentParser) -> None:
    """Timeouts, retries, the outage breaker and the per-cell kernel bounds."""
    parser.add_argument(
        "--timeout",
        type=_bounded_int(1, MAX_TIMEOUT_S),
        default=DEFAULT_SESSION_TIMEOUT_S,
        help=f"per-session timeout, s, 1..{MAX_TIMEOUT_S} (5400)",
    )
    parser.add_argument(
        "--verify-timeout",
        type=_bounded_int(1, MAX_TIMEOUT_S),
        default=DEFAULT_VERIFY_TIMEOUT_S,
        help=f"verify/oracle timeout, s, 1..{MAX_TIMEOUT_S} (600)",
    )
    parser.add_argument(
        "--max-retries",
        type=_bounded_int(0, MAX_RETRIES),
        default=DEFAULT_MAX_RETRIES,
        help=f"CLI API retries per request, 0..{MAX_RETRIES} (3)",
    )
    parser.add_argument(
        "--outage-streak",
        type=_bounded_int(0, MAX_OUTAGE_STREAK),
        default=DEFAULT_OUTAGE_STREAK,
        help=f"abort after this many consecutive systemic failures, 0..{MAX_OUTAGE_STREAK} "
        "(0 disables; default 5)",
    )
    _cell_bounds(parser)


def _bounded(minimum: int, maximum: int, unit: str):
    """An argparse type: an integer in [minimum, maximum] (a limit below the floor would break the CLI)."""

    def parse(value: str) -> int:
        try:
            number = int(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{value!r} is not a whole number of {unit}") from None
        if not minimum <= number <= maximum:
            raise argparse.ArgumentTypeError(f"must be between {minimum} and {maximum} {unit}")
        return number

    return parse


_HOST_MEMORY_MIB = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // (1024 * 1024)


def _cpus(text: str) -> float:
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


def _cell_bounds(parser: argparse.ArgumentParser) -> None:
    """Kernel resource bounds per cell (sandbox/_limits.py)."""
    parser.add_argument(
        "--cell-memory-mib",
        type=_bounded(MIN_MEMORY_MIB, max(MIN_MEMORY_MIB, _HOST_MEMORY_MIB), "MiB"),
        default=DEFAULT_MEMORY_MIB,
        help=f"memory limit per cell, all its processes together (cgroup; default {DEFAULT_MEMORY_MIB})",
    )
    parser.add_argument(
        "--cell-pids",
        type=_bounded(MIN_PIDS, 1 << 20, "processes"),
        default=DEFAULT_PIDS,
        help=f"process/thread limit per cell (cgroup; default {DEFAULT_PIDS})",
    )
    parser.add_argument(
        "--cell-cpus",
        type=_cpus,
        default=None,
        help="CPU quota per cell in cores, all its processes together (cgroup; default: host cores / "
        "--workers, at least 1, so a cell's durations do not depend on its neighbours; 0: no bound)",
    )
    parser.add_argument(
        "--cell-disk-mib",
        type=_bounded(MIN_DISK_MIB, 1 << 24, "MiB"),
        default=DEFAULT_DISK_MIB,
        help=f"disk a cell may write on top of its clone (own volume; default {DEFAULT_DISK_MIB})",
    )


def _scheduling(parser: argparse.ArgumentParser) -> None:
    """How cells are scheduled, when a sweep stops early, and what it may skip (README: Scheduling)."""
    parser.add_argument(
        "--scheduler",
        choices=SCHEDULERS,
        default="packed",
        help="packed: one pool across tasks, bounded by --window (less idle time); waves: one task at a "
        "time in waves of --workers (idles on each wave's slowest cell; overrun ≤ workers−1); default packed",
    )
    parser.add_argument(
        "--window",
        type=_positive_int,
        help=f"packed: a cell starts only while fewer than WINDOW cells ahead of the in-order fold; larger "
        f"is faster but wastes up to WINDOW−1 paid cells after an outage (default {PACKED_WINDOW_MULTIPLIER}"
        "×workers, never below workers)",
    )
    parser.add_argument(
        "--order",
        choices=ORDERS,
        default="plan",
        help="packed: which allowed cell starts first; longest-first predicts each cell's wall from prior "
        "rows (--resume/--reuse-results) or the task's expensive flag, so long cells do not trail; rows "
        "and the breaker still fold in plan order (default plan)",
    )
    parser.add_argument(
        "--max-cost-usd",
        type=_positive_float,
        metavar="X",
        help="stop starting cells once spent + the arm's median cell cost would pass X (unknown costs are "
        "estimated, never 0); ends the sweep as aborted, exit 1",
    )
    parser.add_argument(
        "--max-runtime",
        type=_positive_float,
        metavar="S",
        help="start no cell more than S seconds after the sweep began; running cells finish; aborted, exit 1",
    )
    parser.add_argument(
        "--executor",
        choices=EXECUTORS,
        default="threads",
        help="where cells run: threads in this process, or ray: one Ray task per cell on nodes advertising "
        f"the {RAY_RESOURCE} resource; with a loopback model upstream (scripted provider, local gateway) "
        "every such node must be this machine, checked before any cell (README: Ray) (default threads)",
    )
    parser.add_argument(
        "--ray-address",
        metavar="HOST:PORT",
        help="--executor ray: join the Ray cluster whose head listens at HOST:PORT (e.g. 127.0.0.1:6390) "
        "instead of starting and stopping a private local instance; no head answering within 5 s "
        "(connect) + 60 s (join) is exit 2",
    )
    parser.add_argument(
        "--resume",
        type=Path,
        metavar="DIR",
        help="continue an interrupted sweep in DIR in place: the same arguments are required (checked "
        "against DIR/sweep.lock.json, exit 2 naming what differs); finished cells whose transcripts still "
        "match their sha256 are kept, the rest run",
    )
    parser.add_argument(
        "--reuse-results",
        type=Path,
        metavar="DIR",
        help="copy clean incumbent/comparator rows of an earlier sweep in DIR instead of paying for them "
        "when every reuse condition holds (README: Scheduling); candidate arms are always paid, and one cell "
        "per fully reusable arm is paid as a canary",
    )


def _binaries(parser: argparse.ArgumentParser) -> None:
    """The Claude Code CLI and the sandbox backend (the last two are for tests only)."""
    parser.add_argument(
        "--claude-bin", help="Claude Code binary (default: the pinned version installed by ./dev)"
    )
    parser.add_argument("--bwrap-bin", default="bwrap", help=argparse.SUPPRESS)
    parser.add_argument("--unsafe-no-bwrap", action="store_true", help=argparse.SUPPRESS)


def _credentials(parser: argparse.ArgumentParser) -> None:
    """Endpoint and credentials; they reach only the CLI process or the gateway, never a tool."""
    parser.add_argument(
        "--base-url", help="Anthropic-compatible endpoint (default https://api.anthropic.com)"
    )
    parser.add_argument(
        "--anthropic-api-key", help=f"API key (default: ${ANTHROPIC_KEY_ENV}); reaches only the CLI process"
    )
    parser.add_argument(
        "--auth-token", help=f"bearer token instead of an API key (default: ${AUTH_TOKEN_ENV})"
    )
    parser.add_argument(
        "--openai-api-key",
        help=f"OpenAI key (default: ${OPENAI_KEY_ENV}) for OpenAI model ids (openai/…, gpt-…, chatgpt-…, "
        "o<digit>…): they run through a loopback LiteLLM gateway that alone holds the key",
    )
    parser.add_argument(
        "--via-gateway",
        action="store_true",
        help="with --provider scripted: route the CLI through a real LiteLLM proxy to the scripted "
        "provider speaking OpenAI Responses (offline)",
    )


def _skills(parser: argparse.ArgumentParser) -> None:
    """The evaluated toolkit, a candidate overlay, the external comparator plugin."""
    parser.add_argument(
        "--toolkit",
        default="demo",
        metavar="DIR|NAME",
        help="toolkit directory holding a toolkit.yaml (skills per role, MCP servers, index step), or a "
        "shipped toolkit name: demo (default)",
    )
    parser.add_argument(
        "--candidate-overlay",
        type=Path,
        help="candidate skill overlay dir (Markdown under skills/<skill>/); requires exactly the paired arms "
        "its skills imply (e.g. review: ce_review review candidate_review)",
    )
    parser.add_argument(
        "--candidate-origin",
        choices=("manual-initial-overlay", "model-proposer"),
        help="who wrote --candidate-overlay, recorded in sweep.json and promotion.json (default "
        "manual-initial-overlay; the evolve driver passes model-proposer for a proposer's overlay)",
    )
    parser.add_argument("--ce-plugin-dir", type=Path, help="external comparator plugin dir (ce_* arms)")
    parser.add_argument(
        "--ce-plugin-version", help="the comparator plugin's exact version (must match its manifest)"
    )


def _safety(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--check-tasks",
        action="store_true",
        help="only self-check the task file (python -m workflow_bench.tasks check): base fails, reference "
        "patch passes, 3 repeats; exit 1 if a task cannot discriminate",
    )
    parser.add_argument(
        "--canary",
        action="store_true",
        help="run the containment escape suite first; exit 2 without sweeping unless every attack is blocked",
    )


def _promotion(parser: argparse.ArgumentParser) -> None:
    add_promotion_arguments(parser, positive_int=_positive_int)


# Order = the order of --help; keep it when adding a group.
GROUPS = (
    _sweep_shape,
    _model_choice,
    _limits,
    _scheduling,
    _binaries,
    _credentials,
    _skills,
    _promotion,
    _safety,
)


def build_parser(*, description: str | None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m workflow_bench.runner",
        description=description,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    for add_group in GROUPS:
        add_group(parser)
    return parser
