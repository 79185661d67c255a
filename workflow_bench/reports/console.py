"""Live progress lines of a running sweep: one redacted, printable line per event, with elapsed time.

``Console`` is thread-safe (cells finish on executor threads) and redacts the sweep's static
secrets; ``printable`` keeps agent text (tool names, error tails) from driving the terminal.
``cell_summary`` is the one-line outcome printed when a cell's row is stored.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Sequence

from workflow_bench.providers.access import CellKey
from workflow_bench.redaction import printable, redact_text
from workflow_bench.rows.model import Row

CONSOLE_LINE_CHARS = 2000  # one live line at most; longer agent text is cut with "…"


class Console:
    """Thread-safe live progress lines with elapsed time."""

    def __init__(self, started: float, secrets: Sequence[str]) -> None:
        self._lock = threading.Lock()
        self._started = started
        self._secrets = tuple(secrets)

    def __call__(self, line: str) -> None:
        self._emit(line, sys.stdout)

    def error(self, line: str) -> None:
        """An ``error: ...`` line, on stderr like the runner's other errors (same redaction)."""
        self._emit(f"error: {line}", sys.stderr)

    def _emit(self, line: str, stream) -> None:
        with self._lock:  # printable: agent text (tool names, error tails) must not drive the terminal
            print(printable(redact_text(line, self._secrets), CONSOLE_LINE_CHARS), file=stream, flush=True)

    def elapsed(self) -> str:
        seconds = int(time.monotonic() - self._started)
        return f"{seconds // 60}m{seconds % 60:02d}s"


def cell_summary(key: CellKey, row: Row) -> str:
    def show(value, fmt="{}"):
        return "n/a" if value is None else fmt.format(value)

    return (
        f"{key.label} resolved={row.resolved} authored={row.authored_tests_passed} "
        f"oracle={row.oracle_passed} in={show(row.input_tokens)} "
        f"out={show(row.output_tokens)} cost={show(row.cost_usd, '${:.4f}')} "
        f"took={show(row.duration_s, '{:.1f}s')} turns={show(row.num_turns)} "
        f"error_kind={row.error_kind or 'none'}"
    )
