"""The lines of a failed run's output the self-check shows: its last ones, and the error line
itself when those are only stack frames (jest's configuration errors print the message, then a
dozen frames ``at …``: the tail alone hid why).

Pure. Callers: ``tasks.check``.
"""

from __future__ import annotations

import re

OUTPUT_TAIL_LINES = 8  # enough for a traceback's last frame and the error line
_FRAME = re.compile(r"^\s*(at |File \"|\.\.\. \d+ more|\^+$|~+$)")
_ERROR = re.compile(r"(Error|Exception|error:|ERROR|FAIL|panicked|cannot|Could not|not found)")


def output_tail(output: str) -> list[str]:
    """The last lines of a run's output, and the error line itself when those are only stack
    frames (a jest config error's message sits above 8+ frames ``at …``)."""
    all_lines = output.strip().splitlines()
    tail = all_lines[-OUTPUT_TAIL_LINES:]
    if tail and all(_FRAME.match(line) or not line.strip() for line in tail):
        head = all_lines[: len(all_lines) - len(tail)]
        error = next(
            (line for line in reversed(head) if _ERROR.search(line) and not _FRAME.match(line)), None
        )
        if error is None:
            error = next((line for line in reversed(head) if not _FRAME.match(line) and line.strip()), None)
        if error is not None:
            tail = [error, "…", *tail]
    return tail
