"""Everything that can reject an evolve invocation's input, checked before anything runs (exit 2).

``check_inputs`` reads and validates the task file (and resolves its bindings once: later
generations must benchmark exactly these), the toolkit, both scripts, the provider flags, the
seed results, the initial overlay, the learning queue, the output root and ``--apply``'s
target. It creates nothing but the repository cache the runner's own binding uses too.
The pinned CLI and bwrap are checked only when a proposer will run (``preflight_proposer``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workflow_bench.claude_cli import ClaudeCliError, check_claude_digest, locate_claude
from workflow_bench.input_files import InputFileError
from workflow_bench.providers.options import ProviderOptions, ProviderOptionsError
from workflow_bench.providers.scripted import ScriptError, load_script
from workflow_bench.sandbox import SandboxError, SandboxKind, preflight
from workflow_bench.taskspec.schema import TaskFileError, TaskSpecError
from workflow_bench.taskspec.spec import bind_tasks, load_task_files, select_tasks
from workflow_bench.toolkit.manifest import load_toolkit
from workflow_bench.toolkit.spec import Toolkit, ToolkitError

from .args import EvolveConfig, changeable_roles
from .evidence import EvidenceError, read_rows
from .learnings import LearningNote, LearningsError, read_learnings
from .overlay_freeze import OverlayRejected, validate_overlay
from .runtime_cap import RuntimeCap, RuntimeCapError, derive_cap

DEFAULT_LEARNINGS = Path("workflow_bench") / "learnings.jsonl"


class InputError(ValueError):
    """Bad input: exit 2 with this message, nothing run."""


@dataclass(frozen=True, slots=True)
class CheckedInput:
    toolkit: Toolkit
    pinned_tasks: tuple[Mapping[str, Any], ...]
    learnings: tuple[LearningNote, ...]
    allowed_skills: tuple[str, ...]
    target: Path | None
    cap: RuntimeCap


def check_inputs(config: EvolveConfig) -> CheckedInput:
    try:
        toolkit = load_toolkit(config.toolkit)
        specs = load_task_files(config.tasks, config.probes)
        selected, _ = select_tasks(specs, include_expensive=config.include_expensive)
        if not selected:
            raise InputError(
                f"{config.tasks}: no task selected (all are expensive; pass --include-expensive)"
            )
        for script in (config.script, config.proposer_script):
            if script is not None:
                load_script(script)
        _provider(config)
        if config.initial_overlay is not None:
            validate_overlay(config.initial_overlay, toolkit=toolkit, incumbents=config.incumbents)
        if config.seed_results is not None:
            if not config.seed_results.is_dir():
                raise InputError(f"--seed-results {config.seed_results}: not a directory")
            read_rows(config.seed_results)
        learnings = _learnings(config)
        _out_root(config.out_root)
        target = _target(config, toolkit)
        cap = derive_cap(max_runtime_s=config.max_runtime_s)
        bindings = bind_tasks(selected)
    except (
        TaskFileError, TaskSpecError, ToolkitError, ScriptError, ProviderOptionsError, OverlayRejected,
        EvidenceError, LearningsError, RuntimeCapError, InputFileError,
    ) as exc:  # fmt: skip
        raise InputError(str(exc)) from None
    allowed = tuple(sorted(toolkit.skill_for(r) for r in changeable_roles(config.incumbents)))
    return CheckedInput(
        toolkit=toolkit,
        pinned_tasks=tuple(b.to_json() for b in bindings),
        learnings=learnings,
        allowed_skills=allowed,
        target=target,
        cap=cap,
    )


def _provider(config: EvolveConfig) -> None:
    bench = ProviderOptions(
        provider=config.provider, model=config.model, script=config.script, base_url=config.base_url
    )
    bench.validate()
    if config.runs_proposer:
        proposer_options(config).validate()


def proposer_options(config: EvolveConfig) -> ProviderOptions:
    return ProviderOptions(
        provider=config.provider,
        model=config.proposer_model or config.model,
        script=config.proposer_script,
        base_url=config.base_url,
    )


def _learnings(config: EvolveConfig) -> tuple[LearningNote, ...]:
    if config.learnings is not None and not config.learnings.is_file():
        raise InputError(f"--learnings {config.learnings}: no such file")
    return read_learnings(config.learnings or DEFAULT_LEARNINGS)


def _out_root(path: Path) -> None:
    if path.is_symlink() or (path.exists() and not path.is_dir()):
        raise InputError(f"--out-root {path}: not a directory")
    if path.is_dir() and any(path.iterdir()):
        raise InputError(f"--out-root {path}: must be new or empty (generations never overwrite evidence)")


def _target(config: EvolveConfig, toolkit: Toolkit) -> Path | None:
    if not config.apply:
        return None
    target = config.target or Path(toolkit.root)
    if not target.is_dir():
        raise InputError(f"--target {target}: not a directory")
    return target


def preflight_proposer(config: EvolveConfig) -> tuple[Path, str]:
    """(pinned CLI binary, bwrap path) for the proposer; InputError when either is unusable."""
    try:
        claude_bin = locate_claude(config.claude_bin)
        check_claude_digest(claude_bin)
        bwrap = preflight(SandboxKind.BWRAP)
    except (ClaudeCliError, SandboxError) as exc:
        raise InputError(str(exc)) from None
    return claude_bin, bwrap


def credential_values(env: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """Every credential this process can see: redacted from anything the proposer reads."""
    env = os.environ if env is None else env
    names = ("WORKFLOW_BENCH_ANTHROPIC_API_KEY", "WORKFLOW_BENCH_AUTH_TOKEN", "WORKFLOW_BENCH_OPENAI_API_KEY")
    return tuple(env[n] for n in names if env.get(n))
