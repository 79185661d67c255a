"""Signals for a sweep's life: before it starts, SIGTERM interrupts; while it runs, it cancels.

Owns the two process-wide handler scopes the runner installs (main thread only; a sweep started
from another thread, e.g. by a test, keeps the process's handlers). Must never: swallow a second
Ctrl-C (it stops hard), or leave a handler installed after its scope. Callers: ``runner``.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator


@contextlib.contextmanager
def cancel_on_signals(cancel: threading.Event) -> Iterator[None]:
    """SIGINT/SIGTERM set the sweep's cancellation event; a second SIGINT stops hard."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum, _frame) -> None:
        if cancel.is_set() and signum == signal.SIGINT:
            raise KeyboardInterrupt
        print(f"[cancel] signal {signum}: stopping; in-flight cells are recorded as cancelled", flush=True)
        cancel.set()

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


@contextlib.contextmanager
def interrupt_on_sigterm() -> Iterator[None]:
    """Until the sweep installs its own handlers, SIGTERM interrupts like Ctrl-C (exit 130, cleaned up)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum, _frame) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
