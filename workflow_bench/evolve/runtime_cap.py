"""The evolve loop's runtime cap: derived once at start, consulted before every paid phase.

The cap comes from ``--max-runtime`` or, when the process runs on a machine that is stopped at
the end of a fixed window (the reference's weekly instance), from that window: window −
``/proc/uptime`` − a stop reserve, never below ``MIN_WINDOW_S``. It is read together with the
monotonic clock once, at process start, so later clock changes cannot stretch it.

No proposer or benchmark starts with less than its bounded envelope left (its own timeout), and
each phase's timeout is clamped to what is left: a stop keeps every finished generation's
evidence and exits 1. Motivation (reference §11): a box stopped mid-job lost 51 finished
sessions because nothing checked the window before starting paid work.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

WINDOW_ENV = "WORKFLOW_BENCH_INSTANCE_WINDOW_SECONDS"
RESERVE_ENV = "WORKFLOW_BENCH_STOP_RESERVE_SECONDS"
# Reference values: a 24 h instance window, 1.5 h kept back for the stop and the upload, and a
# floor of 10 minutes so a misread uptime never yields a negative or zero budget.
DEFAULT_RESERVE_S = 5400.0
MIN_WINDOW_S = 600.0


class RuntimeCapError(ValueError):
    """A malformed window variable: exit 2, nothing run."""


class RuntimeCapReached(RuntimeError):
    """Less time is left than the next phase's envelope: stop, keep the evidence, exit 1."""


@dataclass(frozen=True, slots=True)
class RuntimeCap:
    """Seconds this invocation may still spend; ``budget_s`` None means uncapped."""

    budget_s: float | None
    started: float
    source: str
    clock: Callable[[], float] = time.monotonic

    def remaining_s(self) -> float | None:
        if self.budget_s is None:
            return None
        return self.budget_s - (self.clock() - self.started)

    def require(self, envelope_s: float, *, what: str) -> float:
        """The timeout ``what`` may use (its envelope, clamped); raises when it does not fit."""
        left = self.remaining_s()
        if left is None:
            return envelope_s
        if left < envelope_s:
            raise RuntimeCapReached(
                f"runtime cap ({self.source}): {max(left, 0):.0f} s left, {what} needs its envelope of "
                f"{envelope_s:.0f} s; stopping before it"
            )
        return min(envelope_s, left)


def _seconds(env: Mapping[str, str], name: str) -> float | None:
    text = env.get(name)
    if text is None or text == "":
        return None
    try:
        value = float(text)
    except ValueError:
        raise RuntimeCapError(f"${name}={text!r} is not a number of seconds") from None
    if not value >= 0 or value == float("inf"):
        raise RuntimeCapError(f"${name}={text!r} must be a finite number of seconds >= 0")
    return value


def uptime_s(path: Path = Path("/proc/uptime")) -> float:
    return float(path.read_text().split()[0])


def derive_cap(
    *,
    max_runtime_s: float | None,
    env: Mapping[str, str] | None = None,
    uptime: Callable[[], float] = uptime_s,
    clock: Callable[[], float] = time.monotonic,
) -> RuntimeCap:
    """The cap for this process: ``--max-runtime`` wins, else the instance window, else none."""
    env = os.environ if env is None else env
    started = clock()
    window = _seconds(env, WINDOW_ENV)
    if max_runtime_s is not None:
        return RuntimeCap(budget_s=max_runtime_s, started=started, source="--max-runtime", clock=clock)
    if window is None:
        return RuntimeCap(budget_s=None, started=started, source="uncapped", clock=clock)
    reserve = _seconds(env, RESERVE_ENV)
    reserve = DEFAULT_RESERVE_S if reserve is None else reserve
    budget = max(window - uptime() - reserve, MIN_WINDOW_S)
    return RuntimeCap(budget_s=budget, started=started, source=f"${WINDOW_ENV}", clock=clock)
