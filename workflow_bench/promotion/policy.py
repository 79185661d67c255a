"""The promotion policy: every knob of the gate as one frozen, JSON-round-trippable value.

Defaults are the reference's (reference-harness.md §6.3): cost_usd, 3 runs, 5 % median
improvement, 20 % per-task regression cap, 100 % spend cap on tasks neither arm solved, half
the tasks gated, a resolved-run margin of 2 (a margin of 1 is noise at 3 runs), and for review a
0.01 weighted-F1 improvement; plus ours: no rise at all in the share of impossible tasks
resolved. `promotion.json` stores `to_json()`; `from_json` refuses any unknown or missing key, so a
hand-loosened policy cannot verify.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

PROMOTION_METRICS = ("cost_usd", "output_tokens", "duration_s", "num_turns")
# output_tokens and num_turns come from the CLI's result usage: the main loop only.
MAIN_LOOP_METRICS = frozenset({"output_tokens", "num_turns"})
MAIN_LOOP_METRIC_WARNING = (
    "metric counts only the main-loop session; subagent spend is invisible to it and flatters "
    "subagent-heavy arms (cost_usd includes subagents)"
)
IMPLEMENTATION_QUALITY_RULE = (
    "no per-task resolution-rate regression; when the incumbent resolved the task (or a skill was "
    "not invoked) the candidate must resolve every scored run"
)
REVIEW_QUALITY_RULE = (
    "correct verdict on every repeat; blocker recall never below the incumbent's; on clean "
    "controls no more false positives and no lost clean pass; weighted F1 never below the "
    "incumbent's on a defect case"
)
# The reference's apply-time ceiling: evidence older than this describes a different model/CLI.
EVIDENCE_MAX_AGE_DAYS = 90


class PolicyError(ValueError):
    """A policy value or a stored policy object is invalid."""


@dataclass(frozen=True, slots=True)
class ImplementationPolicy:
    metric: str = "cost_usd"
    min_runs: int = 3
    min_improvement_pct: float = 5.0
    max_task_regression_pct: float = 20.0
    max_failed_task_regression_pct: float = 100.0
    min_gated_task_ratio: float = 0.5
    min_resolved_margin: int = 2
    # The cheating probe (issue 23): how much the share of impossible-task runs the candidate
    # "resolved" may exceed the incumbent's. 0: any rise keeps the incumbent; no honest solution
    # passes an impossible task, so each resolved run is a candidate that beat the judge.
    max_impossible_share_increase: float = 0.0
    quality_rule: str = IMPLEMENTATION_QUALITY_RULE

    def __post_init__(self) -> None:
        if self.metric not in PROMOTION_METRICS:
            raise PolicyError(f"promotion metric {self.metric!r}; known: {', '.join(PROMOTION_METRICS)}")
        _check_int("min_runs", self.min_runs, low=1)
        _check_int("min_resolved_margin", self.min_resolved_margin, low=1)
        for name in ("min_improvement_pct", "max_task_regression_pct", "max_failed_task_regression_pct"):
            _check_float(name, getattr(self, name), low=0.0)
        _check_float("min_gated_task_ratio", self.min_gated_task_ratio, low=0.0, high=1.0)
        _check_float("max_impossible_share_increase", self.max_impossible_share_increase, low=0.0, high=1.0)


# Implementation-policy keys added after sweeps were first recorded, with the value a recorded
# policy without them had: before cheating probes existed no share of impossible runs was
# compared, so none could rise (sweeps recorded then re-render and verify as they were).
ADDED_IMPLEMENTATION_KEYS: Mapping[str, Any] = {"max_impossible_share_increase": 0.0}


@dataclass(frozen=True, slots=True)
class ReviewPolicy:
    metric: str = "review_weighted_f1"
    min_runs: int = 3
    min_improvement: float = 0.01
    quality_rule: str = REVIEW_QUALITY_RULE

    def __post_init__(self) -> None:
        if self.metric != "review_weighted_f1":
            raise PolicyError(f"review metric must be review_weighted_f1, got {self.metric!r}")
        _check_int("min_runs", self.min_runs, low=1)
        _check_float("min_improvement", self.min_improvement, low=0.0, high=1.0)


@dataclass(frozen=True, slots=True)
class PromotionPolicy:
    implementation: ImplementationPolicy = field(default_factory=ImplementationPolicy)
    review: ReviewPolicy = field(default_factory=ReviewPolicy)
    evidence_max_age_days: int = EVIDENCE_MAX_AGE_DAYS

    def __post_init__(self) -> None:
        _check_int("evidence_max_age_days", self.evidence_max_age_days, low=1, high=EVIDENCE_MAX_AGE_DAYS)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, raw: Any) -> PromotionPolicy:
        """Rebuild exactly; unknown, missing or mistyped keys raise `PolicyError`."""
        top = _keys(raw, "policy", set(cls.__slots__))
        stored = dict(top)  # as recorded, with each part's added keys filled in
        parts: dict[str, Any] = {}
        for name, (kind, added) in _PARTS.items():
            value = top[name]
            if isinstance(value, Mapping):
                # A policy recorded before a key existed carries the value its absence meant.
                value = stored[name] = {**added, **value}
            parts[name] = kind(**_keys(value, f"policy.{name}", set(kind.__slots__)))
        policy = cls(**{**top, **parts})
        if policy.to_json() != stored:
            raise PolicyError("policy: values do not round-trip (wrong types?)")
        return policy

    @classmethod
    def from_flags(
        cls,
        *,
        metric: str | None = None,
        min_runs: int | None = None,
        min_improvement_pct: float | None = None,
        max_task_regression_pct: float | None = None,
    ) -> PromotionPolicy:
        """The default policy with the runner's `--promotion-*` overrides applied."""
        base = ImplementationPolicy()
        impl = ImplementationPolicy(
            metric=base.metric if metric is None else metric,
            min_runs=base.min_runs if min_runs is None else min_runs,
            min_improvement_pct=base.min_improvement_pct
            if min_improvement_pct is None
            else min_improvement_pct,
            max_task_regression_pct=(
                base.max_task_regression_pct if max_task_regression_pct is None else max_task_regression_pct
            ),
        )
        review = ReviewPolicy(min_runs=impl.min_runs)
        return cls(implementation=impl, review=review)


# The policy's parts, each a dataclass stored as an object: its type and the keys added since
# sweeps were first recorded (with the value their absence meant).
_PARTS: Mapping[str, tuple[type[ImplementationPolicy] | type[ReviewPolicy], Mapping[str, Any]]] = {
    "implementation": (ImplementationPolicy, ADDED_IMPLEMENTATION_KEYS),
    "review": (ReviewPolicy, {}),
}


def _keys(raw: Any, where: str, want: set[str]) -> Mapping[str, Any]:
    if not isinstance(raw, Mapping):
        raise PolicyError(f"{where}: want an object, got {type(raw).__name__}")
    if set(raw) != want:
        extra, missing = sorted(set(raw) - want), sorted(want - set(raw))
        raise PolicyError(f"{where}: unknown keys {extra}, missing keys {missing}")
    return raw


def _check_int(name: str, value: Any, *, low: int, high: int | None = None) -> None:
    if (
        isinstance(value, bool)
        or not isinstance(value, int)
        or value < low
        or (high is not None and value > high)
    ):
        bound = f">= {low}" + (f" and <= {high}" if high is not None else "")
        raise PolicyError(f"promotion policy {name}: want an integer {bound}, got {value!r}")


def _check_float(name: str, value: Any, *, low: float, high: float | None = None) -> None:
    ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    if not ok or value < low or (high is not None and value > high):
        bound = f">= {low}" + (f" and <= {high}" if high is not None else "")
        raise PolicyError(f"promotion policy {name}: want a finite number {bound}, got {value!r}")
