"""The generation loop: evidence → bundle → proposer → freeze → benchmark → gate → apply.

One generation ``gen-N/`` under the output root holds: ``evidence/`` (the read-only bundle),
``proposer-session.json`` and ``proposer-transcript.jsonl``, ``proposal.md``, ``overlay/`` (the
frozen overlay), ``runner-argv.json`` and ``bench/`` (the runner's output directory, with
``promotion.json``). ``evolve.json`` at the root records the configuration, the task bindings
pinned before generation 0 and each generation's outcome.

Outcomes: ``promoted`` stops the loop (and applies with ``--apply``); ``not-promoted`` feeds
this generation's bench to the next one as evidence and ``--reuse-results``; any failure
(proposer, overlay, runner, verification, the runtime cap) stops the loop with exit 1, keeping
every file written so far. Nothing here edits a toolkit except ``bench.apply_to``.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workflow_bench.providers.scripted import load_script
from workflow_bench.schedule.signals import cancel_on_signals
from workflow_bench.toolkit.overlay import Overlay

from .args import EvolveConfig
from .bench import BenchError, apply_to, gate_verdict, run_bench, runner_argv
from .bundle import write_bundle
from .evidence import EvidenceError, collect_evidence
from .inputs import CheckedInput, credential_values, proposer_options
from .learnings import notes_for
from .overlay_freeze import OverlayRejected, check_output, freeze, recheck, validate_overlay
from .proposer import ProposerError, ProposerRun, run_proposer
from .runtime_cap import RuntimeCapReached

RECORD = "evolve.json"


class GenerationFailed(RuntimeError):
    """A generation could not produce trustworthy evidence: stop, keep everything, exit 1."""


@dataclass(frozen=True, slots=True)
class LoopResult:
    exit_code: int
    outcomes: tuple[dict[str, Any], ...]


def gen_dir(config: EvolveConfig, n: int) -> Path:
    return config.out_root / f"gen-{n}"


def evidence_source(config: EvolveConfig, n: int) -> Path | None:
    """Generation ``n``'s evidence and ``--reuse-results``: the previous bench, or the seed."""
    return gen_dir(config, n - 1) / "bench" if n > 0 else config.seed_results


def overlay_origin(config: EvolveConfig, n: int) -> str:
    """Generation 0 with --initial-overlay runs the operator's overlay; every other one a proposer's."""
    return "manual-initial-overlay" if n == 0 and config.initial_overlay is not None else "model-proposer"


def planned_argv(config: EvolveConfig, n: int) -> list[str]:
    gen = gen_dir(config, n)
    reuse = evidence_source(config, n)
    return runner_argv(
        config, overlay=gen / "overlay", out=gen / "bench", reuse=reuse, origin=overlay_origin(config, n)
    )


def _write_record(config: EvolveConfig, checked: CheckedInput, outcomes: list[dict[str, Any]]) -> None:
    record = {
        "tasks": str(config.tasks),
        "probes": str(config.probes) if config.probes is not None else None,
        "arms": list(config.arms),
        "runs": config.runs,
        "provider": config.provider,
        "model": config.model,
        "proposer_model": config.proposer_model or config.model,
        "toolkit": config.toolkit,
        "pinned_tasks": list(checked.pinned_tasks),
        "generations": outcomes,
    }
    path = config.out_root / RECORD
    tmp = path.with_name(RECORD + ".tmp")
    tmp.write_text(json.dumps(record, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def run_loop(
    config: EvolveConfig,
    checked: CheckedInput,
    *,
    tools: tuple[Path, str] | None,
    say: Callable[[str], None] = print,
) -> LoopResult:
    config.out_root.mkdir(parents=True, exist_ok=True)
    outcomes: list[dict[str, Any]] = []
    _write_record(config, checked, outcomes)
    cancel = threading.Event()
    try:
        with cancel_on_signals(cancel):
            return _loop(config, checked, tools=tools, say=say, outcomes=outcomes, cancel=cancel)
    except KeyboardInterrupt:
        if outcomes and "status" not in outcomes[-1]:
            outcomes[-1].update(status="cancelled")
        _write_record(config, checked, outcomes)
        raise


def _loop(
    config: EvolveConfig,
    checked: CheckedInput,
    *,
    tools: tuple[Path, str] | None,
    say: Callable[[str], None],
    outcomes: list[dict[str, Any]],
    cancel: threading.Event,
) -> LoopResult:
    for n in range(config.generations):
        outcome: dict[str, Any] = {"generation": n}
        outcomes.append(outcome)
        try:
            promoted = _generation(config, checked, n, tools=tools, outcome=outcome, say=say, cancel=cancel)
        except RuntimeCapReached as exc:
            outcome.update(status="stopped", reason=str(exc))
            where = "in" if gen_dir(config, n).exists() else "before"
            say(f"STOPPED {where} gen-{n}: {exc}")
            _write_record(config, checked, outcomes)
            return LoopResult(1, tuple(outcomes))
        except (GenerationFailed, ProposerError, OverlayRejected, BenchError, EvidenceError) as exc:
            outcome.update(status="failed", reason=str(exc))
            say(f"NOT PROMOTED — gen-{n} failed closed: {exc}")
            _write_record(config, checked, outcomes)
            return LoopResult(1, tuple(outcomes))
        _write_record(config, checked, outcomes)
        if promoted:
            return LoopResult(0, tuple(outcomes))
    say("No candidate cleared the gate; the incumbent skills stay.")
    return LoopResult(0, tuple(outcomes))


def _generation(
    config: EvolveConfig,
    checked: CheckedInput,
    n: int,
    *,
    tools: tuple[Path, str] | None,
    outcome: dict[str, Any],
    say: Callable[[str], None],
    cancel: threading.Event,
) -> bool:
    _stop_if_cancelled(cancel)
    gen = gen_dir(config, n)
    manual = overlay_origin(config, n) == "manual-initial-overlay"
    envelope = config.bench_timeout_s + (0 if manual else config.proposer_timeout_s)
    checked.cap.require(envelope, what=f"gen-{n} (proposer + benchmark)")
    gen.mkdir(parents=True)
    if manual and config.initial_overlay is not None:
        overlay = validate_overlay(
            config.initial_overlay, toolkit=checked.toolkit, incumbents=config.incumbents
        )
    else:
        overlay = _propose(config, checked, n, gen, tools=tools, cancel=cancel)
    outcome["origin"] = overlay_origin(config, n)
    frozen = freeze(overlay, gen / "overlay", toolkit=checked.toolkit, incumbents=config.incumbents)
    outcome["overlay_digest"] = frozen.digest
    files = ", ".join(p for p, _ in overlay.files)
    say(f"[evolve] gen-{n}: overlay frozen ({files}; digest {frozen.digest[:12]})")
    timeout = checked.cap.require(config.bench_timeout_s, what=f"gen-{n} benchmark")
    recheck(frozen, toolkit=checked.toolkit, incumbents=config.incumbents)
    argv = planned_argv(config, n)
    (gen / "runner-argv.json").write_text(json.dumps(argv, indent=1) + "\n", encoding="utf-8")
    say(f"[evolve] gen-{n}: benchmark: {' '.join(argv[1:])}")
    code = run_bench(argv, timeout_s=timeout, cancel=cancel)
    outcome["runner_exit"] = code
    if code != 0:
        raise GenerationFailed(
            f"the runner exited {code} (outage, budget, health or cancellation); see {gen / 'bench'}"
        )
    recheck(frozen, toolkit=checked.toolkit, incumbents=config.incumbents)
    verdict = gate_verdict(gen / "bench", overlay_digest=frozen.digest, pinned_tasks=checked.pinned_tasks)
    outcome["decisions"] = list(verdict.lines)
    for line in verdict.lines:
        say(f"[gate] {line}")
    if not verdict.promoted:
        outcome["status"] = "not-promoted"
        say(f"NOT PROMOTED — gen-{n}: " + " | ".join(verdict.lines))
        return False
    outcome["status"] = "promoted"
    say(f"PROMOTED — gen-{n}: {gen / 'bench' / 'promotion.json'}")
    if checked.target is not None:
        _stop_if_cancelled(cancel)  # a signal during verification must not be followed by a write
        recheck(frozen, toolkit=checked.toolkit, incumbents=config.incumbents)
        written = apply_to(gen / "bench", target=checked.target)
        outcome["applied"] = [str(p) for p in written]
        for path in written:
            say(f"applied {path}")
        say("Next: review the diff, run the toolkit's tests, open a pull request citing promotion.json")
    return True


def _stop_if_cancelled(cancel: threading.Event) -> None:
    if cancel.is_set():
        raise KeyboardInterrupt("evolve cancelled")


def _propose(
    config: EvolveConfig,
    checked: CheckedInput,
    n: int,
    gen: Path,
    *,
    tools: tuple[Path, str] | None,
    cancel: threading.Event,
) -> Overlay:
    if tools is None:
        raise GenerationFailed("no Claude Code binary or bwrap for the proposer")
    source = evidence_source(config, n)
    secrets = credential_values()
    evidence = collect_evidence(source, secrets=secrets) if source is not None else None
    notes = notes_for(checked.learnings, checked.allowed_skills)
    bundle = write_bundle(gen / "evidence", evidence, notes)
    options = proposer_options(config)
    script = load_script(config.proposer_script) if config.proposer_script is not None else None
    timeout = checked.cap.require(config.proposer_timeout_s, what=f"gen-{n} proposer")
    required = _required_skills(config, checked)
    accepted: list[tuple[Overlay, bytes]] = []  # (overlay, proposal.md), set once by collect

    def collect(output: Path) -> None:
        overlay_dir, proposal = check_output(output)
        overlay = validate_overlay(overlay_dir, toolkit=checked.toolkit, incumbents=config.incumbents)
        accepted.append((overlay, proposal))

    with options.model_access(script) as (access, model):
        run = ProposerRun(
            generation=n,
            toolkit=checked.toolkit,
            skills=checked.allowed_skills,
            required_skills=required,
            bundle=bundle,
            access=access,
            model=model,
            effort=config.effort,
            timeout_s=timeout,
            claude_bin=tools[0],
            bwrap_bin=tools[1],
            gen_dir=gen,
            cancel=cancel,
        )
        run_proposer(run, collect=collect)
    ((overlay, proposal),) = accepted  # run_proposer returns only after collect
    (gen / "proposal.md").write_bytes(proposal)
    return overlay


def _required_skills(config: EvolveConfig, checked: CheckedInput) -> tuple[str, ...]:
    """Skills every acceptable overlay must touch (``work`` when the direct arm is benchmarked)."""
    return (checked.toolkit.skill_for("work"),) if "workflow_direct" in config.incumbents else ()
