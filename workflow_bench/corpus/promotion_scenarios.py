"""Demo scenarios that drive the promotion gate to each decision on purpose, offline.

Each scenario is a scripted-provider script derived from the demo scripts (`demo.yaml` for the
plan candidate on `trivial-amount-grouping`, `review-demo.yaml` for the review candidate on
`review-report-prefix-defect`) by one deliberate change to what the candidate (or the
incumbent) does, plus the runner flags it needs. `python -m workflow_bench.corpus.promotion_scenarios`
regenerates `scripts/promotion/*.yaml` and the two one-task files at the repository root
(`tasks.promotion.yaml`, `tasks.promotion-review.yaml`); a test fails when they drift.

Run one, e.g.: `python -m workflow_bench.runner --provider scripted --runs 3
--tasks tasks.promotion.yaml --script workflow_bench/corpus/scripts/promotion/promote-cheaper.yaml
--arms workflow candidate_workflow --candidate-overlay workflow_bench/corpus/overlays/plan-candidate`
(SCENARIOS[name].argv() gives the exact arguments). Only the model is scripted.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

import yaml

CORPUS = Path(__file__).resolve().parent
REPO_ROOT = CORPUS.parent.parent
SCRIPTS = CORPUS / "scripts" / "promotion"
IMPLEMENTATION_TASK = "trivial-amount-grouping"
REVIEW_TASK = "review-report-prefix-defect"
IMPLEMENTATION_TASKS_FILE = "tasks.promotion.yaml"
REVIEW_TASKS_FILE = "tasks.promotion-review.yaml"
RUNS = 3

Sessions = list[dict[str, Any]]


@functools.cache
def _demo_script(script: str) -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((CORPUS / "scripts" / script).read_text())
    return loaded


def _demo_sessions(script: str, task: str, arm: str) -> Sessions:
    for cell in _demo_script(script)["cells"]:
        arms = cell["match"]["arm"]
        if cell["match"]["task"] == task and (arm == arms or arm in arms):
            return copy.deepcopy(cell["sessions"])
    raise LookupError(f"{script}: no cell for {task} × {arm}")


def _scale_usage(sessions: Sessions, factor: float) -> Sessions:
    """Every declared token count × factor: the CLI prices usage, so cost scales with it."""
    for session in sessions:
        for turn in session["turns"]:
            turn["usage"] = {k: int(v * factor) for k, v in turn["usage"].items()}
    return sessions


def _drop_calls(sessions: Sessions, keep: Callable[[dict[str, Any]], bool], *, text: str) -> Sessions:
    for session in sessions:
        for turn in session["turns"]:
            calls = [c for c in turn.get("tool_calls") or [] if keep(c)]
            if calls != (turn.get("tool_calls") or []):
                turn["tool_calls"] = calls
                turn.setdefault("text", text)
                if not calls:
                    del turn["tool_calls"]
    return sessions


def _skip_skill(sessions: Sessions) -> Sessions:
    """The last session answers without ever calling the Skill tool: skill-not-invoked."""
    _drop_calls(sessions[-1:], lambda c: c["name"] != "Skill", text="Working without the skill.")
    return sessions


def _skip_implementation(sessions: Sessions) -> Sessions:
    """The work session writes the tests but never the implementation: verify fails."""
    return _drop_calls(
        sessions,
        lambda c: not (c["name"] == "Write" and c["input"]["file_path"].endswith("ledger/money.py")),
        text="Leaving the implementation for later.",
    )


def _outage(sessions: Sessions) -> Sessions:
    """Every request of the candidate gets HTTP 529: session-error, systemic."""
    return [{"turns": [{"fault": {"http_status": 529}, "text": "never served"}]} for _ in sessions]


def _rename_skill(sessions: Sessions, name: str) -> Sessions:
    for session in sessions:
        for turn in session["turns"]:
            for call in turn.get("tool_calls") or []:
                if call["name"] == "Skill":
                    call["input"] = {**call["input"], "skill": name}
    return sessions


@dataclass(frozen=True, slots=True)
class Scenario:
    name: str
    review: bool
    expected: str
    """The decision the gate must reach for the candidate arm."""
    why: str
    cells: Callable[[], Mapping[str, Sessions]]
    """arm -> scripted sessions."""
    extra_flags: tuple[str, ...] = ()

    @property
    def script(self) -> Path:
        return SCRIPTS / f"{self.name}.yaml"

    @property
    def candidate_arm(self) -> str:
        return "candidate_review" if self.review else "candidate_workflow"

    def argv(self, *, out: Path, tasks: Path | None = None, repo_root: Path = REPO_ROOT) -> list[str]:
        corpus = repo_root / "workflow_bench" / "corpus"
        if self.review:
            arms = ["ce_review", "review", "candidate_review"]
            overlay = corpus / "overlays" / "review-candidate"
            plugin = ["--ce-plugin-dir", str(corpus / "comparator-plugin"), "--ce-plugin-version", "0.3.0"]
            task_file = repo_root / REVIEW_TASKS_FILE
        else:
            arms, overlay, plugin = (
                ["workflow", "candidate_workflow"],
                corpus / "overlays" / "plan-candidate",
                [],
            )
            task_file = repo_root / IMPLEMENTATION_TASKS_FILE
        return [
            "--provider", "scripted", "--runs", str(RUNS), "--tasks", str(tasks or task_file),
            "--script", str(self.script), "--arms", *arms, "--candidate-overlay", str(overlay), *plugin,
            *self.extra_flags, "--out", str(out),
        ]  # fmt: skip

    def script_data(self) -> dict[str, Any]:
        task = REVIEW_TASK if self.review else IMPLEMENTATION_TASK
        model = "scripted-review-demo" if self.review else "scripted-demo"
        return {
            "schema_version": 1,
            "model": model,
            "cells": [
                {"match": {"task": task, "arm": arm}, "sessions": sessions}
                for arm, sessions in self.cells().items()
            ],
        }


def _work(arm_change: Callable[[Sessions], Sessions] | None = None) -> Callable[[], Mapping[str, Sessions]]:
    def cells() -> Mapping[str, Sessions]:
        incumbent = _demo_sessions("demo.yaml", IMPLEMENTATION_TASK, "workflow")
        candidate = copy.deepcopy(incumbent)
        return {
            "workflow": incumbent,
            "candidate_workflow": arm_change(candidate) if arm_change else candidate,
        }

    return cells


def _review(
    *, incumbent: str, candidate: str, skip_skill: bool = False
) -> Callable[[], Mapping[str, Sessions]]:
    """Sessions by source arm of review-demo.yaml, skill renamed to what the target arm must call."""

    def cells() -> Mapping[str, Sessions]:
        comparator = _demo_sessions("review-demo.yaml", REVIEW_TASK, "ce_review")
        inc = _rename_skill(_demo_sessions("review-demo.yaml", REVIEW_TASK, incumbent), "review")
        cand = _rename_skill(_demo_sessions("review-demo.yaml", REVIEW_TASK, candidate), "review")
        return {
            "ce_review": comparator,
            "review": inc,
            "candidate_review": _skip_skill(cand) if skip_skill else cand,
        }

    return cells


_ALL = (
    Scenario(
        "promote-cheaper", False, "promote", "the candidate declares 20 % fewer tokens",
        _work(lambda s: _scale_usage(s, 0.8)),
    ),
    Scenario(
        "keep-quality-regression", False, "keep_incumbent",
        "the candidate never writes the implementation (verify fails)", _work(_skip_implementation),
    ),
    Scenario(
        "keep-efficiency-regression", False, "keep_incumbent", "the candidate declares 50 % more tokens",
        _work(lambda s: _scale_usage(s, 1.5)),
    ),
    Scenario(
        "insufficient-skill-not-invoked", False, "insufficient_evidence",
        "the candidate's work session never calls its skill", _work(_skip_skill),
    ),
    Scenario(
        "insufficient-aborted", False, "insufficient_evidence",
        "the candidate's provider is down; the breaker aborts",
        _work(_outage), extra_flags=("--outage-streak", "1", "--max-retries", "0"),
    ),
    Scenario(
        "review-promote", True, "promote", "the incumbent misses a defect the candidate finds",
        _review(incumbent="ce_review", candidate="review"),
    ),
    Scenario(
        "review-keep-regression", True, "keep_incumbent", "the candidate misses a defect the incumbent finds",
        _review(incumbent="review", candidate="ce_review"),
    ),
    Scenario(
        "review-insufficient-skill-not-invoked", True, "insufficient_evidence",
        "the candidate never calls its skill",
        _review(incumbent="review", candidate="review", skip_skill=True),
    ),
)  # fmt: skip
SCENARIOS: Mapping[str, Scenario] = MappingProxyType({s.name: s for s in _ALL})


class _Dumper(yaml.SafeDumper):
    def ignore_aliases(self, data: Any) -> bool:
        return True


def _literal(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _literal)

HEADER = "# Generated by `python -m workflow_bench.corpus.promotion_scenarios`; do not edit by hand.\n"


def render_script(scenario: Scenario) -> str:
    head = f"{HEADER}# Scenario {scenario.name}: expect {scenario.expected}: {scenario.why}.\n"
    return head + yaml.dump(
        scenario.script_data(), Dumper=_Dumper, sort_keys=False, width=200, allow_unicode=True
    )


def render_task_file(source: str, task_id: str) -> str:
    data = yaml.safe_load((REPO_ROOT / source).read_text())
    [task] = [t for t in data["tasks"] if t["id"] == task_id]
    head = f"{HEADER}# The one {source} task the promotion demo scenarios run (see promotion_scenarios.py).\n"
    return head + yaml.dump({"tasks": [task]}, Dumper=_Dumper, sort_keys=False, width=200, allow_unicode=True)


def generated_files() -> dict[Path, str]:
    files = {s.script: render_script(s) for s in _ALL}
    files[REPO_ROOT / IMPLEMENTATION_TASKS_FILE] = render_task_file(
        "tasks.scenarios.yaml", IMPLEMENTATION_TASK
    )
    files[REPO_ROOT / REVIEW_TASKS_FILE] = render_task_file("tasks.review.yaml", REVIEW_TASK)
    return files


def main() -> None:
    SCRIPTS.mkdir(parents=True, exist_ok=True)
    for path, text in generated_files().items():
        path.write_text(text, encoding="utf-8")
        print(f"wrote {path.relative_to(REPO_ROOT)}")


if __name__ == "__main__":
    main()
