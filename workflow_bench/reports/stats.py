"""Paired statistics (descriptive only; the promotion gate stays deterministic and never reads them).

For each arm versus `baseline`, and each candidate versus its incumbent: per-task paired deltas
(arm − reference) of resolve rate and median cost over valid rows; across tasks the median delta,
a bootstrap 95 % percentile CI of that median (scipy.stats.bootstrap, fixed seed so a re-render is
byte-identical) and a two-sided sign test (scipy.stats.binomtest on non-zero deltas). Per arm,
pass@k and pass^k for k ≤ runs with the unbiased estimator over each task's n valid runs with c
resolved: pass@k = 1 − C(n−c, k)/C(n, k), pass^k = C(c, k)/C(n, k), averaged over tasks with n ≥ k.
Beside each sign test, McNemar's exact test on the paired binary outcome: cells paired by (task,
run) where both arms have a valid row, the discordant pairs (one arm resolved, the other not)
tested against 1:1 with scipy.stats.binomtest (the exact form; no continuity correction needed).
``treatment_firing`` (reports/firing.py): did each arm's expected skills and MCP tools fire.

Impossible tasks (cheating probes, ``task_impossible``) stay out of every resolve rate, delta and
pass@k; each arm's summary reports them beside its resolve rate instead (``impossible_resolved`` of
``impossible_runs``: ``reports.aggregate.probe_tally``).

Pure: rows in, a ``PairedStatistics`` (reports/stats_model.py) out.
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Mapping, Sequence

from workflow_bench.arms import ARMS
from workflow_bench.judging.outcomes import is_excluded
from workflow_bench.reports.aggregate import probe_tally
from workflow_bench.rows.model import Row

from .firing import treatment_firing
from .stats_model import (
    ArmSummary,
    Comparison,
    DeltaSummary,
    McNemar,
    PairedStatistics,
    PassK,
    SignTest,
    TaskDelta,
)

STATS_FILE = "stats.json"
STATS_SCHEMA = (
    3  # 3: impossible tasks (cheating probes) apart from resolve rates; 2: mcnemar, treatment_firing
)
BASELINE_ARM = "baseline"
# 2000 resamples: the CI's endpoints move by < 1 % of the spread between seeds at this size, and a
# sweep's report must render in well under a second.
BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_SEED = 0
CONFIDENCE = 0.95
_DIGITS = 6


def _round(value: float | None) -> float | None:
    return None if value is None or not math.isfinite(value) else round(float(value), _DIGITS)


def _task_arm_rows(rows: Sequence[Row]) -> dict[tuple[str, str], list[Row]]:
    grouped: dict[tuple[str, str], list[Row]] = {}
    for row in rows:
        if not is_excluded(row) and not row.task_impossible:
            grouped.setdefault((str(row.task), str(row.arm)), []).append(row)
    return grouped


def _resolve_rate(valid: Sequence[Row]) -> float | None:
    return sum(1 for r in valid if r.resolved is True) / len(valid) if valid else None


def _median_cost(valid: Sequence[Row]) -> float | None:
    costs = [r.cost_usd for r in valid]
    known = [c for c in costs if c is not None]
    if not costs or len(known) != len(costs):
        return None
    return float(statistics.median(known))


def summarize_deltas(deltas: Sequence[float]) -> DeltaSummary:
    """Median, bootstrap CI of the median and the sign test over per-task deltas."""
    # numpy and scipy are imported where they are used: importing scipy.stats costs every runner
    # command seconds of start-up (its --help and each refused input included) otherwise.
    import numpy as np
    from scipy import stats as scipy_stats

    positive = sum(1 for d in deltas if d > 0)
    negative = sum(1 for d in deltas if d < 0)
    ci: list[float | None] | None = None
    if len(deltas) >= 2:
        result = scipy_stats.bootstrap(
            (np.asarray(deltas, dtype=float),),
            np.median,
            confidence_level=CONFIDENCE,
            n_resamples=BOOTSTRAP_RESAMPLES,
            method="percentile",
            rng=np.random.default_rng(BOOTSTRAP_SEED),
        )
        ci = [_round(result.confidence_interval.low), _round(result.confidence_interval.high)]
    p_value = (
        _round(scipy_stats.binomtest(positive, positive + negative, 0.5).pvalue)
        if positive + negative
        else None
    )
    return DeltaSummary(
        tasks=len(deltas),
        median_delta=_round(float(np.median(deltas))) if deltas else None,
        ci95=ci,
        sign_test=SignTest(
            positive=positive, negative=negative, zero=len(deltas) - positive - negative, p_value=p_value
        ),
    )


def mcnemar(rows: Sequence[Row], arm: str, reference: str) -> McNemar:
    """McNemar's exact test on resolved, over (task, run) pairs valid in both arms (descriptive);
    impossible tasks are not paired (a resolved probe is no success)."""
    from scipy import stats as scipy_stats  # on first use (see summarize_deltas)

    counted = [r for r in rows if not is_excluded(r) and not r.task_impossible]
    mine = {(r.task, r.run): r for r in counted if r.arm == arm}
    theirs = {(r.task, r.run): r for r in counted if r.arm == reference}
    pairs = [
        (mine[k].resolved is True, theirs[k].resolved is True) for k in sorted(mine.keys() & theirs.keys())
    ]
    arm_only = sum(1 for a, b in pairs if a and not b)
    reference_only = sum(1 for a, b in pairs if b and not a)
    discordant = arm_only + reference_only
    return McNemar(
        pairs=len(pairs),
        both=sum(1 for a, b in pairs if a and b),
        neither=sum(1 for a, b in pairs if not a and not b),
        arm_only=arm_only,
        reference_only=reference_only,
        p_value=_round(scipy_stats.binomtest(arm_only, discordant, 0.5).pvalue) if discordant else None,
    )


def _comparison(
    grouped: Mapping[tuple[str, str], list[Row]],
    tasks: Sequence[str],
    arm: str,
    reference: str,
    kind: str,
    rows: Sequence[Row] = (),
) -> Comparison:
    per_task: list[TaskDelta] = []
    for task in tasks:
        mine, theirs = grouped.get((task, arm), []), grouped.get((task, reference), [])
        if not mine or not theirs:
            continue
        rate_a, rate_b = _resolve_rate(mine), _resolve_rate(theirs)
        cost_a, cost_b = _median_cost(mine), _median_cost(theirs)
        per_task.append(
            TaskDelta(
                task=task,
                resolve_rate_delta=_round(rate_a - rate_b)
                if rate_a is not None and rate_b is not None
                else None,
                cost_usd_delta=_round(cost_a - cost_b) if cost_a is not None and cost_b is not None else None,
            )
        )
    rate_deltas = [t.resolve_rate_delta for t in per_task if t.resolve_rate_delta is not None]
    cost_deltas = [t.cost_usd_delta for t in per_task if t.cost_usd_delta is not None]
    return Comparison(
        arm=arm,
        reference=reference,
        kind=kind,
        per_task=per_task,
        resolve_rate=summarize_deltas(rate_deltas),
        cost_usd=summarize_deltas(cost_deltas),
        mcnemar=mcnemar(rows, arm, reference),
    )


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k for one task: P(at least one of k draws without replacement resolved)."""
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"pass@k needs 0 <= c <= n and 1 <= k <= n; got n={n} c={c} k={k}")
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """Unbiased pass^k for one task: P(all k draws without replacement resolved)."""
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"pass^k needs 0 <= c <= n and 1 <= k <= n; got n={n} c={c} k={k}")
    return math.comb(c, k) / math.comb(n, k)


def _pass_k(
    grouped: Mapping[tuple[str, str], list[Row]], tasks: Sequence[str], arm: str, runs: int
) -> dict[str, PassK]:
    out: dict[str, PassK] = {}
    for k in range(1, runs + 1):
        counts = [
            (len(v), sum(1 for r in v if r.resolved is True))
            for t in tasks
            if len(v := grouped.get((t, arm), [])) >= k
        ]
        out[str(k)] = PassK(
            tasks=len(counts),
            pass_at_k=_round(statistics.fmean(pass_at_k(n, c, k) for n, c in counts)) if counts else None,
            pass_hat_k=_round(statistics.fmean(pass_hat_k(n, c, k) for n, c in counts)) if counts else None,
        )
    return out


def _arm_summary(rows: Sequence[Row], arm: str) -> ArmSummary:
    """Resolve rate over every valid run of the arm with a Wilson 95 % CI, its median cost, and its
    impossible tasks' runs resolved beside them."""
    from scipy import stats as scipy_stats  # on first use (see summarize_deltas)

    mine = [r for r in rows if r.arm == arm]
    valid = [r for r in mine if not is_excluded(r) and not r.task_impossible]
    probes_resolved, probe_runs = probe_tally(mine)
    resolved = sum(1 for r in valid if r.resolved is True)
    ci = None
    if valid:
        interval = scipy_stats.binomtest(resolved, len(valid)).proportion_ci(CONFIDENCE, method="wilson")
        ci = [_round(interval.low), _round(interval.high)]
    cost = _median_cost(valid)
    return ArmSummary(
        valid_runs=len(valid),
        resolved=resolved,
        resolve_rate=_round(resolved / len(valid)) if valid else None,
        resolve_rate_ci95=ci,
        median_cost_usd=_round(cost),
        impossible_runs=probe_runs,
        impossible_resolved=probes_resolved,
    )


def paired_statistics(
    rows: Sequence[Row], *, arms: Sequence[str], tasks: Sequence[str], runs: int, reference: str | None = None
) -> PairedStatistics:
    """``reference``: with no ``baseline`` arm, the arm every other is paired with (a regraded
    predictions file: its first model, ``vs-reference``)."""
    grouped = _task_arm_rows(rows)
    comparisons = []
    if BASELINE_ARM in arms:
        comparisons += [
            _comparison(grouped, tasks, a, BASELINE_ARM, "vs-baseline", rows)
            for a in arms
            if a != BASELINE_ARM
        ]
    elif reference is not None and reference in arms:
        comparisons += [
            _comparison(grouped, tasks, a, reference, "vs-reference", rows) for a in arms if a != reference
        ]
    for arm in arms:
        incumbent = ARMS[arm].candidate_of if arm in ARMS else None
        if incumbent and incumbent in arms:
            comparisons.append(_comparison(grouped, tasks, arm, incumbent, "candidate-vs-incumbent", rows))
    return PairedStatistics(
        schema_version=STATS_SCHEMA,
        method={
            "delta": "arm minus reference, per task over valid rows (resolve rate; median cost_usd)",
            "ci": f"bootstrap percentile {CONFIDENCE:.0%} CI of the median delta, "
            f"{BOOTSTRAP_RESAMPLES} resamples, seed {BOOTSTRAP_SEED}",
            "sign_test": "two-sided binomial test on the signs of non-zero deltas",
            "resolve_rate_ci95": "Wilson score interval over the arm's valid runs (all tasks pooled)",
            "impossible": "impossible tasks (cheating probes) are left out of resolve rates, deltas and "
            "pass@k; impossible_resolved of impossible_runs counts their valid runs resolved",
            "pass_k": "unbiased estimator per task over valid runs, averaged over tasks with n >= k",
            "mcnemar": "exact McNemar test (two-sided binomial on discordant pairs) of resolved, cells "
            "paired by (task, run) where both arms have a valid row",
        },
        arms={arm: _arm_summary(rows, arm) for arm in arms},
        comparisons=comparisons,
        pass_k={arm: _pass_k(grouped, tasks, arm, runs) for arm in arms},
        treatment_firing=treatment_firing(rows, arms=arms),
    )


def stats_text(stats: PairedStatistics) -> str:
    """stats.json's bytes: the document's JSON, sorted keys, two-space indent, no NaN."""
    obj = stats.model_dump(mode="json")
    return json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False) + "\n"
