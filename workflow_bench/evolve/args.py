"""The evolve driver's argv: flag syntax, and the checks that span flags (exit 2, nothing run).

Owns ``build_parser`` (names, defaults, help) and ``EvolveConfig`` (the validated, frozen
input of one evolve invocation). ``EvolveConfig.from_args`` refuses every combination that
cannot work before anything is read, cloned or started; checks that need files (tasks,
toolkit, seed results, learnings, the initial overlay) run in ``inputs.check_inputs``.
Credentials are never flags here: the benchmark and the proposer read them from the
``WORKFLOW_BENCH_*`` environment variables, so they never reach a runner argv.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

from workflow_bench import argtypes
from workflow_bench.argtypes import bounded_int, bounded_seconds
from workflow_bench.arms import CANDIDATE_OF, REQUIRED_ARMS_BY_ROLE, required_candidate_arms
from workflow_bench.promotion.flags import PROMOTION_FLAGS, add_promotion_arguments
from workflow_bench.runner_args import MAX_RUNS, MAX_WORKERS, RunnerFlags
from workflow_bench.toolkit.spec import SkillRole

MAX_GENERATIONS = 20  # a weekly job runs 1-3; more is a typo, not a plan
# 1800 s: a proposer reads a bounded bundle (<= 2 MiB) and writes a few Markdown files; the
# reference clamps its 5400 s session ceiling to the window, we start tighter and say so.
DEFAULT_PROPOSER_TIMEOUT_S = 1800
# 4 h: the weekly reference job's benchmark step ran 19 h for 3 runs of the full review corpus
# with 3 workers; the demo corpus takes minutes. Operators size it with --bench-timeout.
DEFAULT_BENCH_TIMEOUT_S = 4 * 3600
MAX_TIMEOUT_S = 7 * 86_400
EVOLVABLE_INCUMBENTS = ("workflow", "workflow_direct")
DEFAULT_INCUMBENTS = ("workflow",)
_seconds = bounded_seconds(MAX_TIMEOUT_S)


class EvolveArgsError(ValueError):
    """A flag combination that cannot work: exit 2, nothing run."""


def _incumbent(value: str) -> str:
    if value not in EVOLVABLE_INCUMBENTS:
        raise argparse.ArgumentTypeError(
            f"{value!r} cannot be evolved here; incumbent arms: {', '.join(EVOLVABLE_INCUMBENTS)} "
            "(review evolution needs the comparator plugin and is not wired into evolve yet)"
        )
    return value


def build_parser() -> argparse.ArgumentParser:
    """Evolve's own flags, and the runner's it shares, added from their one declaration (``RunnerFlags``)."""
    parser = argparse.ArgumentParser(
        prog=argtypes.prog("evolve"),
        description=(
            "Propose a candidate skill overlay from the last benchmark's evidence, benchmark it "
            "against the incumbent on paired arms, and promote it only through the promotion gate."
        ),
        epilog=(
            "Exit codes: 0 done (PROMOTED, or no candidate cleared the gate); 1 a generation failed "
            "(proposer, overlay, benchmark, verification) or the runtime cap stopped the loop, "
            "evidence kept; 2 bad arguments or input (nothing run); 130 cancelled (SIGINT/SIGTERM)."
        ),
    )
    shared = RunnerFlags
    shared.tasks.add(parser, help="task file (as for the runner)")
    shared.probes.add(parser, help="impossible tasks benchmarked beside --tasks (as for the runner)")
    parser.add_argument(
        "--generations", type=bounded_int(1, MAX_GENERATIONS), default=1, help="generations (1)"
    )
    shared.runs.add(parser, default=3, help=f"runs per task × arm, 1..{MAX_RUNS} (3)")
    shared.workers.add(parser, help=f"benchmark workers, 1..{MAX_WORKERS} (1)")
    parser.add_argument(
        "--arms",
        nargs="+",
        type=_incumbent,
        default=list(DEFAULT_INCUMBENTS),
        help="incumbent arms; each is paired with its candidate_* arm (default: workflow, which "
        "lets the proposer change the plan skill; workflow workflow_direct: the work skill)",
    )
    shared.include_expensive.add(parser, help="benchmark expensive tasks too")
    shared.provider.add(parser)
    shared.model.add(parser, help="benchmark model (required for anthropic; scripted: the script's)")
    parser.add_argument("--proposer-model", help="proposer model (default: --model)")
    shared.effort.add(parser)
    shared.base_url.add(parser, help="Anthropic-compatible endpoint (key: $WORKFLOW_BENCH_ANTHROPIC_API_KEY)")
    shared.script.add(parser, help="scripted-provider script for the benchmark arms")
    parser.add_argument("--proposer-script", type=Path, help="scripted-provider script for the proposer")
    parser.add_argument(
        "--seed-results", type=Path, help="a sweep directory: generation 0's evidence and --reuse-results"
    )
    parser.add_argument(
        "--initial-overlay",
        type=Path,
        help="generation 0 benchmarks this overlay instead of running a proposer",
    )
    parser.add_argument(
        "--learnings",
        type=Path,
        help="learning queue (JSON lines; default workflow_bench/learnings.jsonl when it exists)",
    )
    shared.toolkit.add(parser, help="toolkit directory or shipped name (demo)")
    parser.add_argument("--out-root", type=Path, help="output root (default results/wfevolve-<UTC stamp>/)")
    parser.add_argument(
        "--max-runtime",
        type=_seconds,
        help="seconds this invocation may run; no proposer or benchmark starts without its envelope left",
    )
    parser.add_argument(
        "--proposer-timeout", type=_seconds, default=DEFAULT_PROPOSER_TIMEOUT_S,
        help=f"proposer session limit, its envelope (default {DEFAULT_PROPOSER_TIMEOUT_S})",
    )  # fmt: skip
    parser.add_argument(
        "--bench-timeout", type=_seconds, default=DEFAULT_BENCH_TIMEOUT_S,
        help=f"benchmark subprocess limit, its envelope (default {DEFAULT_BENCH_TIMEOUT_S})",
    )  # fmt: skip
    shared.claude_bin.add(parser, help="the pinned Claude Code binary (as for the runner)")
    parser.add_argument(
        "--apply", action="store_true", help="on PROMOTED, apply the overlay (promotion apply)"
    )
    parser.add_argument(
        "--target", type=Path, help="toolkit directory --apply writes into (default: --toolkit)"
    )
    parser.add_argument("--dry-run", action="store_true", help="print each runner argv and exit 0")
    add_promotion_arguments(parser)
    return parser


def candidate_pairs(incumbents: tuple[str, ...]) -> tuple[str, ...]:
    """Each incumbent followed by its candidate arm, in the order given."""
    twin = {incumbent: candidate for candidate, incumbent in CANDIDATE_OF.items()}
    return tuple(arm for incumbent in incumbents for arm in (incumbent, twin[incumbent]))


def changeable_roles(incumbents: tuple[str, ...]) -> frozenset[SkillRole]:
    """Skill roles an overlay may touch so that its required arms are exactly ``candidate_pairs``."""
    pairs = candidate_pairs(incumbents)
    roles = frozenset(REQUIRED_ARMS_BY_ROLE)
    subsets = [frozenset(r for i, r in enumerate(sorted(roles)) if mask >> i & 1) for mask in range(1, 8)]
    return frozenset().union(*(s for s in subsets if required_candidate_arms(s) == pairs))


@dataclass(frozen=True, slots=True, kw_only=True)
class EvolveConfig:
    """One evolve invocation, validated. Paths are as given (relative to the working directory)."""

    tasks: Path
    probes: Path | None
    generations: int
    runs: int
    workers: int
    incumbents: tuple[str, ...]
    include_expensive: bool
    provider: str
    model: str | None
    proposer_model: str | None
    effort: str | None
    base_url: str | None
    script: Path | None
    proposer_script: Path | None
    seed_results: Path | None
    initial_overlay: Path | None
    learnings: Path | None
    toolkit: str
    out_root: Path
    max_runtime_s: float | None
    proposer_timeout_s: float
    bench_timeout_s: float
    claude_bin: str | None
    apply: bool
    target: Path | None
    dry_run: bool
    promotion_flags: tuple[tuple[str, str], ...]
    """The ``--promotion-*`` flags given, forwarded verbatim to the runner."""

    @property
    def arms(self) -> tuple[str, ...]:
        return candidate_pairs(self.incumbents)

    @property
    def runs_proposer(self) -> bool:
        """Whether any generation runs a proposer (all but a manual generation 0)."""
        return self.initial_overlay is None or self.generations > 1

    @classmethod
    def from_args(cls, args: argparse.Namespace, *, default_out_root: Path) -> EvolveConfig:
        incumbents = tuple(dict.fromkeys(args.arms))
        if len(incumbents) != len(args.arms):
            raise EvolveArgsError(f"--arms lists an arm twice: {' '.join(args.arms)}")
        if not changeable_roles(incumbents):
            pairs = " ".join(candidate_pairs(incumbents))
            raise EvolveArgsError(
                f"--arms {' '.join(incumbents)}: no skill overlay is benchmarked on exactly {pairs}; "
                "use --arms workflow (plan skill) or --arms workflow workflow_direct (work skill)"
            )
        _check_provider(args)
        if args.target is not None and not args.apply:
            raise EvolveArgsError("--target is where --apply writes; it needs --apply")
        flags = _promotion_flags(args)
        if args.apply and flags:
            raise EvolveArgsError(
                "--apply ships skills only under the default promotion policy; drop the --promotion-* flags "
                f"({', '.join(name for name, _ in flags)}) or drop --apply"
            )
        if args.initial_overlay is None and args.provider == "scripted" and args.proposer_script is None:
            raise EvolveArgsError("--provider scripted needs --proposer-script (or --initial-overlay)")
        if args.initial_overlay is not None and args.generations == 1 and args.proposer_script is not None:
            raise EvolveArgsError(
                "--proposer-script is unused: --initial-overlay replaces generation 0's proposer"
            )
        return cls(
            tasks=args.tasks,
            probes=args.probes,
            generations=args.generations,
            runs=args.runs,
            workers=args.workers,
            incumbents=incumbents,
            include_expensive=args.include_expensive,
            provider=args.provider,
            model=args.model,
            proposer_model=args.proposer_model,
            effort=args.effort,
            base_url=args.base_url,
            script=args.script,
            proposer_script=args.proposer_script,
            seed_results=args.seed_results,
            initial_overlay=args.initial_overlay,
            learnings=args.learnings,
            toolkit=args.toolkit,
            out_root=args.out_root or default_out_root,
            max_runtime_s=args.max_runtime,
            proposer_timeout_s=args.proposer_timeout,
            bench_timeout_s=args.bench_timeout,
            claude_bin=args.claude_bin,
            apply=args.apply,
            target=args.target,
            dry_run=args.dry_run,
            promotion_flags=flags,
        )


def _check_provider(args: argparse.Namespace) -> None:
    if args.provider == "scripted":
        given = [
            f for f, v in (("--base-url", args.base_url), ("--proposer-model", args.proposer_model)) if v
        ]
        if given:
            raise EvolveArgsError(f"--provider scripted serves the model itself; drop {', '.join(given)}")
        return
    scripts = [f for f, v in (("--script", args.script), ("--proposer-script", args.proposer_script)) if v]
    if scripts:
        raise EvolveArgsError(f"{', '.join(scripts)} only apply to --provider scripted")
    if not args.model:
        raise EvolveArgsError("--model is required with --provider anthropic (a named, versioned model)")
    for flag, model in (("--model", args.model), ("--proposer-model", args.proposer_model)):
        if model in ("auto", "latest"):
            raise EvolveArgsError(
                f"{flag} {model}: name a versioned model; evidence about 'latest' expires silently"
            )


def _promotion_flags(args: argparse.Namespace) -> tuple[tuple[str, str], ...]:
    values = ((flag.name, getattr(args, flag.dest)) for flag in PROMOTION_FLAGS)
    return tuple((name, str(value)) for name, value in values if value is not None)


__all__ = ["EvolveArgsError", "EvolveConfig", "build_parser", "candidate_pairs", "changeable_roles"]
