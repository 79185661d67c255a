"""``python -m workflow_bench.evolve``: argv → checked input → dry run or the generation loop → exit code.

Exit codes: 0 done (PROMOTED, applied with ``--apply``; or no candidate cleared the gate);
1 a generation failed closed or the runtime cap stopped the loop (evidence kept); 2 bad
arguments or input, before anything ran (no output root, no session, no spend); 130 Ctrl-C.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from .args import EvolveArgsError, EvolveConfig, build_parser
from .bench import shell_line
from .generation import planned_argv, run_loop
from .inputs import InputError, check_inputs, preflight_proposer


def _default_out_root() -> Path:
    return Path("results") / f"wfevolve-{datetime.now(UTC).strftime('%Y%m%dT%H%M%SZ')}"


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)  # argparse exits 2 on a malformed single flag
    try:
        config = EvolveConfig.from_args(args, default_out_root=_default_out_root())
        checked = check_inputs(config)
    except (EvolveArgsError, InputError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if config.dry_run:
        for n in range(config.generations):
            if n == 0 and config.initial_overlay is not None:
                print(f"# gen-{n}: initial overlay {config.initial_overlay} (no proposer)")
            else:
                print(f"# gen-{n}: proposer session in bwrap → {config.out_root / f'gen-{n}' / 'overlay'}")
            print(shell_line(planned_argv(config, n)))
        return 0
    try:
        tools = preflight_proposer(config) if config.runs_proposer else None
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    try:
        return run_loop(config, checked, tools=tools).exit_code
    except KeyboardInterrupt:
        print("cancelled; every generation's evidence so far is kept", file=sys.stderr)
        return 130
