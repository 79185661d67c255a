"""How signals stop a sweep: before it starts they interrupt, while it runs they cancel it.

``interrupt_on_sigterm``: until the sweep installs its own handlers, SIGTERM raises
KeyboardInterrupt like Ctrl-C, so the runner exits 130 and releases what it claimed.
``cancel_on_signals``: while cells run, SIGINT/SIGTERM set the sweep's cancellation event
(in-flight cells are recorded as cancelled, never-started ones go to not-run.jsonl); a second
SIGINT stops hard. Both are no-ops off the main thread (Python only delivers signals there).
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator


@contextlib.contextmanager
def interrupt_on_sigterm() -> Iterator[None]:
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


@contextlib.contextmanager
def cancel_on_signals(cancel: threading.Event) -> Iterator[None]:
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
