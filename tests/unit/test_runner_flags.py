"""One declaration per runner flag: the runner and the evolve driver add the same ``Flag`` objects,
and evolve's runner argv, re-parsed by the runner's own parser, carries every value it meant to.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from workflow_bench.argtypes import Flag, bounded_int
from workflow_bench.evolve.args import EvolveConfig
from workflow_bench.evolve.args import build_parser as evolve_parser
from workflow_bench.evolve.bench import GENERATION_VALUES, RUNNER_ARGV, runner_argv
from workflow_bench.promotion.flags import MAX_MIN_RUNS, PROMOTION_FLAGS
from workflow_bench.runner_args import MAX_RUNS, RunnerFlags
from workflow_bench.runner_args import build_parser as runner_parser

pytestmark = pytest.mark.unit
REPO = Path(__file__).resolve().parents[2]


def _actions(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    return {action.dest: action for action in parser._actions}


def _config(*extra: str) -> EvolveConfig:
    argv = ["--tasks", "t.yaml", "--provider", "anthropic", "--model", "claude-x", "--runs", "4",
            "--workers", "2", "--effort", "high", "--base-url", "http://127.0.0.1:9", "--toolkit", "kit",
            "--claude-bin", "/opt/claude", "--include-expensive", "--arms", "workflow", "workflow_direct",
            "--promotion-min-runs", "4", "--promotion-metric", "duration_s", *extra]  # fmt: skip
    args = evolve_parser().parse_args(argv)
    return EvolveConfig.from_args(args, default_out_root=Path("out-root"))


def test_evolves_runner_argv_reparses_to_every_value_it_forwards():
    config = _config()
    argv = runner_argv(
        config, overlay=Path("o/overlay"), out=Path("o/bench"), reuse=Path("seed"), origin="model-proposer"
    )
    assert argv[1:3] == ["-m", "workflow_bench.runner"]
    parsed = runner_parser(description=None).parse_args(argv[3:])
    generation = {"overlay": Path("o/overlay"), "origin": "model-proposer", "out": Path("o/bench"),
                  "reuse": Path("seed")}  # fmt: skip
    for name, flag in RUNNER_ARGV:
        sent = generation[name] if name in GENERATION_VALUES else getattr(config, name)
        got = getattr(parsed, flag.dest)
        assert (list(got) if isinstance(got, list) else got) == (
            list(sent) if isinstance(sent, tuple) else sent
        ), name
    assert parsed.arms == ["workflow", "candidate_workflow", "workflow_direct", "candidate_workflow_direct"]
    assert parsed.promotion_min_runs == 4 and parsed.promotion_metric == "duration_s"


def test_unset_values_are_left_to_the_runners_defaults():
    args = evolve_parser().parse_args(
        ["--tasks", "t.yaml", "--provider", "scripted", "--proposer-script", "p"]
    )
    config = EvolveConfig.from_args(args, default_out_root=Path("r"))
    argv = runner_argv(config, overlay=Path("ov"), out=Path("b"), reuse=None, origin="model-proposer")
    parsed = runner_parser(description=None).parse_args(argv[3:])
    assert parsed.reuse_results is None and parsed.model is None and parsed.include_expensive is False
    assert "--model" not in argv and "--reuse-results" not in argv


# Flags evolve spells like the runner's but that mean something else there (never forwarded as is).
EVOLVES_OWN = {
    "arms": "incumbent arms; evolve forwards their incumbent/candidate pairs to the runner's --arms",
    "max_runtime": "evolve's bound on its whole invocation, not the runner's start-no-cell-after bound",
}


def test_every_forwarded_flag_is_the_runners_own_declaration():
    declared = {id(v) for v in vars(RunnerFlags).values() if isinstance(v, Flag)}
    assert all(id(flag) in declared for _, flag in RUNNER_ARGV)
    runner, evolve = _actions(runner_parser(description=None)), _actions(evolve_parser())
    shared = [f.dest for f in vars(RunnerFlags).values() if isinstance(f, Flag) and f.dest in evolve]
    assert {"tasks", "runs", "workers", "model", "effort", "script", "toolkit", "claude_bin"} <= set(shared)
    for dest in [*shared, *(f.dest for f in PROMOTION_FLAGS)]:
        if dest in EVOLVES_OWN:
            continue
        assert evolve[dest].type is runner[dest].type, dest  # the same bounded type object
        assert evolve[dest].choices == runner[dest].choices, dest


def test_a_shared_flag_may_change_how_it_reads_never_what_it_accepts():
    parser = argparse.ArgumentParser()
    RunnerFlags.runs.add(parser, default=3, help="runs")
    with pytest.raises(TypeError, match="type"):
        RunnerFlags.runs.add(argparse.ArgumentParser(), type=bounded_int(1, 10**9))


def test_the_gates_min_runs_bound_is_the_runners_runs_bound():
    assert MAX_MIN_RUNS == MAX_RUNS


@pytest.mark.parametrize("value", ["0", "101", "x"])
def test_a_runs_typo_exits_2_in_both_commands(value: str):
    for parse in (runner_parser(description=None).parse_args, evolve_parser().parse_args):
        with pytest.raises(SystemExit) as exc:
            parse(["--tasks", "t.yaml", "--runs", value])
        assert exc.value.code == 2
