"""workflow-bench runner: measure skill workflows against a plain agent on repository tasks.

Every (task, arm, run) cell runs real headless Claude Code sessions in a fresh,
sanitized clone inside bubblewrap; each is judged by the task's authored
verify command and a hidden oracle staged only after the model exits.
Writes results.jsonl (one fsynced row per cell), per-cell patches and
redacted transcripts, and report.md into --out.

Exit codes: 0 done; 1 outage breaker tripped, a budget ended the sweep, or an arm produced no usable
measurement; 2 bad arguments or input (nothing was run); 130 cancelled.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import os
import signal
import sys
import tempfile
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from workflow_bench.cells.workspace import remove_tree
from workflow_bench.providers.access import ModelAccess
from workflow_bench.providers.connect import is_openai_model, openai_access, scripted_access
from workflow_bench.providers.gateway import GatewayError, locate_litellm
from workflow_bench.providers.scripted import Script, ScriptError, load_script
from workflow_bench.schedule.budget import Budget
from workflow_bench.schedule.order import ORDERS
from workflow_bench.schedule.pool import (
    DEFAULT_OUTAGE_STREAK,
    MAX_WORKERS,
    PACKED_WINDOW_MULTIPLIER,
    SCHEDULERS,
    SchedulePolicy,
)
from workflow_bench.schedule.resume import ResumeError, check_lock, kept_rows, write_lock
from workflow_bench.schedule.reuse import ReuseError, load_prior_rows
from workflow_bench.tasks.spec import TaskBinding, TaskFileError, bind_tasks, load_task_file, select_tasks
from workflow_bench.toolkit.comparator import ComparatorError, ComparatorPlugin, snapshot_comparator
from workflow_bench.toolkit.overlay import Overlay, OverlayError, load_overlay
from workflow_bench.toolkit.spec import Toolkit

from .arms import ARMS, DEFAULT_ARMS, UnknownArmError, required_candidate_arms, resolve_arm
from .canary import run_canary
from .claude_cli import ClaudeCliError, claude_version, locate_claude
from .output import OutputDirError, prepare_output_dir
from .sandbox import HOST_CHILD_UID, SandboxError, SandboxKind, preflight
from .sweep import EXIT_CANCELLED, SweepConfig, config_lock, plan_keys, run_sweep

EXIT_USAGE = 2
CORPUS_DIR = Path(__file__).resolve().parent / "corpus"
DEMO_SCRIPT = CORPUS_DIR / "scripts" / "demo.yaml"
DEMO_TOOLKIT = CORPUS_DIR / "toolkit"
EFFORTS = ("low", "medium", "high", "xhigh", "max")
# 5400 s: the reference raised its session ceiling from 3600 after paid runs
# lost incumbent cells to it.
DEFAULT_SESSION_TIMEOUT_S = 5400
DEFAULT_VERIFY_TIMEOUT_S = 600
DEFAULT_MAX_RETRIES = 3
ANTHROPIC_KEY_ENV = "WORKFLOW_BENCH_ANTHROPIC_API_KEY"
OPENAI_KEY_ENV = "WORKFLOW_BENCH_OPENAI_API_KEY"
AUTH_TOKEN_ENV = "WORKFLOW_BENCH_AUTH_TOKEN"
# --unsafe-no-bwrap: the only arms it may run (the paired review arms: read-only workspace,
# artifact outside it), and the warning it prints. Keep in sync with README "Isolation".
UNSAFE_HOST_ARMS = frozenset({"ce_review", "review", "candidate_review"})
UNSAFE_HOST_WARNING = (
    "WARNING: --unsafe-no-bwrap runs every process directly on this host as "
    "{who}. This is NOT a security boundary: no filesystem, network or PID isolation. "
    "The agent's tools can read what that uid can read, reach any address and see host processes."
)


class UsageError(ValueError):
    """Bad arguments or input: exit 2, nothing run."""


def _workers(value: str) -> int:
    workers = int(value)
    if not 1 <= workers <= MAX_WORKERS:
        raise argparse.ArgumentTypeError(f"must be between 1 and {MAX_WORKERS}")
    return workers


def _positive_int(value: str) -> int:
    number = int(value)
    if number < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return number


def _non_negative_int(value: str) -> int:
    number = int(value)
    if number < 0:
        raise argparse.ArgumentTypeError("must be 0 or more")
    return number


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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m workflow_bench.runner",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--tasks", required=True, type=Path, help="task file (YAML), e.g. tasks.scenarios.yaml"
    )
    parser.add_argument(
        "--runs", type=_positive_int, default=1, help="repetitions per task × arm (default 1)"
    )
    parser.add_argument(
        "--workers", type=_workers, default=1, help=f"cells in parallel, 1..{MAX_WORKERS} (default 1)"
    )
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
    parser.add_argument(
        "--include-expensive", action="store_true", help="also run tasks marked expensive: true"
    )
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
    parser.add_argument(
        "--timeout",
        type=_positive_int,
        default=DEFAULT_SESSION_TIMEOUT_S,
        help="per-session timeout, s (5400)",
    )
    parser.add_argument(
        "--verify-timeout",
        type=_positive_int,
        default=DEFAULT_VERIFY_TIMEOUT_S,
        help="verify/oracle timeout, s",
    )
    parser.add_argument(
        "--max-retries",
        type=_non_negative_int,
        default=DEFAULT_MAX_RETRIES,
        help="CLI API retries per request (3)",
    )
    parser.add_argument(
        "--outage-streak",
        type=_non_negative_int,
        default=DEFAULT_OUTAGE_STREAK,
        help="abort after this many consecutive systemic failures (0 disables; default 5)",
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
        "--claude-bin", help="Claude Code binary (default: the pinned version installed by ./dev)"
    )
    parser.add_argument("--bwrap-bin", default="bwrap", help=argparse.SUPPRESS)
    parser.add_argument("--unsafe-no-bwrap", action="store_true", help=argparse.SUPPRESS)
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
    parser.add_argument(
        "--toolkit", type=Path, default=DEMO_TOOLKIT, help="toolkit dir with skills/<name>/SKILL.md"
    )
    parser.add_argument(
        "--candidate-overlay",
        type=Path,
        help="candidate skill overlay dir (Markdown under skills/<skill>/); requires exactly the paired arms "
        "its skills imply (e.g. review: ce_review review candidate_review)",
    )
    parser.add_argument("--ce-plugin-dir", type=Path, help="external comparator plugin dir (ce_* arms)")
    parser.add_argument(
        "--ce-plugin-version", help="the comparator plugin's exact version (must match its manifest)"
    )
    parser.add_argument(
        "--canary",
        action="store_true",
        help="run the containment escape suite first; exit 2 without sweeping unless every attack is blocked",
    )
    return parser


def _toolkit(root: Path) -> Toolkit:
    roles = {"plan": "plan", "work": "work", "review": "review"}
    for name in roles.values():
        if not (root / "skills" / name / "SKILL.md").is_file():
            raise UsageError(f"--toolkit {root}: missing skills/{name}/SKILL.md")
    return Toolkit(root=str(root.resolve()), roles=roles)


def _default_out() -> Path:
    return Path("results") / f"wfbench-{datetime.now(UTC).strftime('%Y%m%d-%H%M%S')}"


@contextlib.contextmanager
def _model_access(args: argparse.Namespace, script: Script | None) -> Iterator[tuple[ModelAccess, str]]:
    """Yield (access, model) for the sweep; starts the scripted provider or the gateway when asked."""
    if script is not None:
        model = args.model or script.model
        with scripted_access(script, model=model, via_gateway=args.via_gateway) as access:
            yield access, model
        return
    openai_key = args.openai_api_key or os.environ.get(OPENAI_KEY_ENV)
    if is_openai_model(args.model):
        with openai_access(model=args.model, openai_api_key=openai_key) as access:
            yield access, args.model
        return
    api_key = args.anthropic_api_key or os.environ.get(ANTHROPIC_KEY_ENV)
    auth_token = args.auth_token or os.environ.get(AUTH_TOKEN_ENV)
    yield (
        ModelAccess(
            provider="anthropic",
            base_url=args.base_url or "https://api.anthropic.com",
            api_key=api_key,
            auth_token=auth_token,
        ),
        args.model,
    )


def _validate_unsafe_host(args: argparse.Namespace) -> None:
    """``--unsafe-no-bwrap``: never under CI, only for the paired review arms, never with the canary."""
    if os.environ.get("CI"):
        raise UsageError("--unsafe-no-bwrap is refused when CI is set: CI must run inside bubblewrap")
    if set(args.arms) != UNSAFE_HOST_ARMS:
        raise UsageError(
            f"--unsafe-no-bwrap only runs the paired review arms ({' '.join(sorted(UNSAFE_HOST_ARMS))}), "
            f"got --arms {' '.join(args.arms)}"
        )
    if args.canary:
        raise UsageError("--canary tests the bubblewrap boundary; it cannot run with --unsafe-no-bwrap")


def _policy(args: argparse.Namespace) -> SchedulePolicy:
    return SchedulePolicy(
        scheduler=args.scheduler, workers=args.workers, window=args.window, outage_streak=args.outage_streak
    )


def _validate_schedule(args: argparse.Namespace) -> None:
    if args.order != "plan" and args.scheduler != "packed":
        raise UsageError(
            f"--order {args.order} needs --scheduler packed: a wave starts all its cells at once"
        )
    if args.window is not None and args.scheduler != "packed":
        raise UsageError(f"--window applies to --scheduler packed, not {args.scheduler}")
    if args.window is not None and args.window < args.workers:
        raise UsageError(f"--window {args.window} is below --workers {args.workers}: workers would idle")


def _validate_args(args: argparse.Namespace) -> None:
    _validate_schedule(args)
    if args.unsafe_no_bwrap:
        _validate_unsafe_host(args)
    if len(set(args.arms)) != len(args.arms):
        raise UsageError(f"--arms lists an arm twice: {' '.join(args.arms)}")
    openai_key = args.openai_api_key or os.environ.get(OPENAI_KEY_ENV)
    if args.provider == "scripted":
        if args.base_url or args.anthropic_api_key or args.auth_token or args.openai_api_key:
            raise UsageError(
                "--provider scripted serves the model itself; "
                "drop --base-url/--anthropic-api-key/--auth-token/--openai-api-key"
            )
        return
    if args.via_gateway:
        raise UsageError(
            "--via-gateway applies to --provider scripted; OpenAI model ids always use the gateway"
        )
    if args.script:
        raise UsageError("--script only applies to --provider scripted")
    if not args.model:
        raise UsageError("--model is required with --provider anthropic")
    if is_openai_model(args.model):
        if args.base_url or args.anthropic_api_key or args.auth_token:
            raise UsageError(
                f"--model {args.model} is an OpenAI model: it runs through the built-in LiteLLM gateway; "
                "drop --base-url/--anthropic-api-key/--auth-token"
            )
        if not openai_key:
            raise UsageError(f"--model {args.model} needs --openai-api-key (or ${OPENAI_KEY_ENV})")
        return
    if args.openai_api_key:
        raise UsageError(
            f"--openai-api-key needs an OpenAI model id (openai/…, gpt-…, chatgpt-…, o<digit>…), "
            f"not {args.model!r}"
        )
    if not (
        args.anthropic_api_key
        or os.environ.get(ANTHROPIC_KEY_ENV)
        or args.auth_token
        or os.environ.get(AUTH_TOKEN_ENV)
    ):
        raise UsageError(
            f"--provider anthropic needs --anthropic-api-key (or ${ANTHROPIC_KEY_ENV}) or --auth-token"
        )


def _needs_gateway(args: argparse.Namespace) -> bool:
    return bool(args.via_gateway or (args.provider != "scripted" and is_openai_model(args.model or "")))


@dataclass(frozen=True, slots=True)
class PreparedInput:
    """Everything validated from argv and the task file, before any clone or model call."""

    toolkit: Toolkit
    bindings: tuple[TaskBinding, ...]
    skipped_expensive: tuple[str, ...]
    bwrap_bin: str
    claude_bin: Path
    claude_version: str
    script: Script | None
    overlay: Overlay | None = None
    comparator: ComparatorPlugin | None = None
    sandbox_kind: SandboxKind = SandboxKind.BWRAP


def prepare(args: argparse.Namespace) -> PreparedInput:
    """Everything that can reject the input, in order; creates nothing but the repo cache."""
    _validate_args(args)
    toolkit = _toolkit(args.toolkit)
    specs = load_task_file(args.tasks)
    selected, skipped = select_tasks(specs, include_expensive=args.include_expensive)
    if not selected:
        raise UsageError(f"{args.tasks}: no task selected (all are expensive; pass --include-expensive)")
    kind = SandboxKind.HOST_UNSAFE if args.unsafe_no_bwrap else SandboxKind.BWRAP
    bwrap = preflight(kind, bwrap_bin=args.bwrap_bin)
    if kind is SandboxKind.HOST_UNSAFE:
        who = f"uid {HOST_CHILD_UID} (dropped from root)" if os.geteuid() == 0 else f"uid {os.geteuid()}"
        print(UNSAFE_HOST_WARNING.format(who=who), file=sys.stderr, flush=True)
    claude_bin = locate_claude(args.claude_bin)
    version = claude_version(claude_bin)
    script = load_script(args.script or DEMO_SCRIPT) if args.provider == "scripted" else None
    if _needs_gateway(args):
        locate_litellm()
    overlay = _overlay(args, toolkit)
    bindings = bind_tasks(selected)
    comparator = _comparator(args)
    return PreparedInput(
        toolkit=toolkit,
        bindings=bindings,
        skipped_expensive=tuple(skipped),
        bwrap_bin=bwrap,
        claude_bin=claude_bin,
        claude_version=version,
        script=script,
        overlay=overlay,
        comparator=comparator,
        sandbox_kind=kind,
    )


def _overlay(args: argparse.Namespace, toolkit: Toolkit) -> Overlay | None:
    """Load the overlay and enforce the candidate-arm rules (reference main())."""
    candidates = [a for a in args.arms if ARMS[a].candidate_of]
    if args.candidate_overlay is None:
        if candidates:
            raise UsageError(f"arm(s) {' '.join(candidates)} need --candidate-overlay")
        return None
    if not candidates:
        raise UsageError("--candidate-overlay needs the candidate arms it is evaluated on (candidate_*)")
    overlay = load_overlay(args.candidate_overlay, toolkit=toolkit)
    required = required_candidate_arms(overlay.roles)
    if tuple(args.arms) != required:
        raise UsageError(
            f"--candidate-overlay touches skill role(s) {', '.join(sorted(overlay.roles))}: --arms must be "
            f"exactly {' '.join(required)} (each candidate paired with its incumbent), "
            f"got {' '.join(args.arms)}"
        )
    return overlay


def _comparator(args: argparse.Namespace) -> ComparatorPlugin | None:
    roles = {role for a in args.arms if ARMS[a].family == "comparator" for role in ARMS[a].skill_roles}
    given = args.ce_plugin_dir is not None or args.ce_plugin_version is not None
    if not roles:
        if given:
            raise UsageError("--ce-plugin-dir/--ce-plugin-version are only for ce_* arms")
        return None
    if args.ce_plugin_dir is None or not args.ce_plugin_version:
        raise UsageError("ce_* arms need both --ce-plugin-dir and --ce-plugin-version")
    dest = Path(tempfile.mkdtemp(prefix="wfbench-comparator-")) / "plugin"
    try:
        return snapshot_comparator(args.ce_plugin_dir, version=args.ce_plugin_version, dest=dest, roles=roles)
    except BaseException:
        remove_tree(dest.parent)
        raise


def _script_digest(args: argparse.Namespace) -> str | None:
    if args.provider != "scripted":
        return None
    return hashlib.sha256((args.script or DEMO_SCRIPT).read_bytes()).hexdigest()


def _sweep_config(
    args: argparse.Namespace,
    ready: PreparedInput,
    *,
    out_dir: Path,
    model: str,
    done_rows: tuple[dict, ...] = (),
    prior_rows: tuple[dict, ...] = (),
) -> SweepConfig:
    return SweepConfig(
        done_rows=done_rows,
        prior_rows=prior_rows,
        reuse_from=args.reuse_results,
        provider=args.provider,
        script_digest=_script_digest(args),
        tasks=ready.bindings,
        skipped_expensive=ready.skipped_expensive,
        arms=tuple(resolve_arm(a) for a in args.arms),
        runs=args.runs,
        policy=_policy(args),
        budget=Budget(max_cost_usd=args.max_cost_usd, max_runtime_s=args.max_runtime),
        order=args.order,
        out_dir=out_dir,
        model=model,
        effort=args.effort,
        session_timeout_s=args.timeout,
        verify_timeout_s=args.verify_timeout,
        max_retries=args.max_retries,
        claude_bin=ready.claude_bin,
        claude_version=ready.claude_version,
        bwrap_bin=ready.bwrap_bin,
        toolkit=ready.toolkit,
        overlay=ready.overlay,
        comparator=ready.comparator,
        sandbox_kind=ready.sandbox_kind,
    )


@contextlib.contextmanager
def _signals_cancel(cancel: threading.Event) -> Iterator[None]:
    """SIGINT/SIGTERM set the sweep's cancellation event; a second SIGINT stops hard."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum, _frame) -> None:
        if cancel.is_set() and signum == signal.SIGINT:
            raise KeyboardInterrupt
        print(f"[cancel] signal {signum}: stopping; in-flight cells are recorded as cancelled", flush=True)
        cancel.set()

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def _require_canary(ready: PreparedInput) -> None:
    code, table = run_canary(
        claude_bin_arg=str(ready.claude_bin), bwrap_bin=ready.bwrap_bin, progress=lambda _: None
    )
    print(table)
    if code != 0:
        raise SandboxError("the containment canary did not block every attack; refusing to run the sweep")


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    prepared: list[PreparedInput] = []
    try:
        return _run(args, prepared)
    finally:
        for ready in prepared:
            if ready.comparator is not None:
                remove_tree(ready.comparator.snapshot.parent)


def _resume_rows(args: argparse.Namespace, ready: PreparedInput, out_dir: Path) -> tuple[dict, ...]:
    """Refuse a configuration that differs from the directory's lock; return the rows it keeps."""
    model = args.model or (ready.script.model if ready.script else None)
    config = _sweep_config(args, ready, out_dir=out_dir, model=model)
    check_lock(out_dir, config_lock(config))
    return kept_rows(out_dir, plan_keys(config))


def _run(args: argparse.Namespace, prepared: list[PreparedInput]) -> int:
    if args.resume is not None and args.out is not None and args.out.resolve() != args.resume.resolve():
        print(f"error: --resume {args.resume} continues in place; drop --out {args.out}", file=sys.stderr)
        return EXIT_USAGE
    out_dir = args.resume or args.out or _default_out()
    out_existed = out_dir.exists()
    done_rows: tuple[dict, ...] = ()
    prior_rows: tuple[dict, ...] = ()
    try:
        ready = prepare(args)
        prepared.append(ready)  # main() removes the comparator snapshot whatever happens next
        if args.canary:
            _require_canary(ready)
        if args.reuse_results is not None:
            prior_rows = load_prior_rows(args.reuse_results, out_dir=out_dir)
        if args.resume is not None:
            done_rows = _resume_rows(args, ready, out_dir)
        else:
            out_dir = prepare_output_dir(out_dir)
    except TaskFileError as exc:
        print(f"error: invalid task file:\n{exc}", file=sys.stderr)
        return EXIT_USAGE
    except (
        UsageError, SandboxError, ClaudeCliError, OutputDirError, ScriptError, GatewayError, OverlayError,
        ComparatorError, ResumeError, ReuseError,
    ) as exc:  # fmt: skip
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    cancel = threading.Event()
    try:
        with _model_access(args, ready.script) as (access, model), _signals_cancel(cancel):
            config = _sweep_config(
                args, ready, out_dir=out_dir, model=model, done_rows=done_rows, prior_rows=prior_rows
            )
            if args.resume is None:
                write_lock(out_dir, config_lock(config))
            print(f"workflow-bench: {access.provider} provider, model {model}, CLI {ready.claude_version}")
            print(f"workflow-bench: writing to {out_dir}")
            _, exit_code = run_sweep(config, access=access, cancel=cancel)
            return exit_code
    except GatewayError as exc:
        # The gateway is started before any cell: nothing ran, so leave no output behind.
        if not out_existed and not any(out_dir.iterdir()):
            out_dir.rmdir()
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("[cancel] interrupted", file=sys.stderr)
        return EXIT_CANCELLED


if __name__ == "__main__":
    sys.exit(main())
