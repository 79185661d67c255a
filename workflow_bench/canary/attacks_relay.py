"""Canary attacks on who may talk to the model: hidden turns from a tool, header smuggling.

Each is a Bash call from the scripted agent inside the real sandbox, written as an adversary would:

- ``relay-hidden-turn`` (main suite, ``attacks_evidence``): no credential to be found; refused.
- ``relay-hidden-subagent`` and ``relay-header-smuggling`` assume the credential *was* breached
  (the way ``attacks_replay`` assumes the request bytes were): a host-side helper reads the CLI's
  key from its ``/proc/<pid>/environ`` (the host may; tools may not) and leaves it in the cell's
  relay directory, which the sandbox sees read-only. Then what stands is the second line:

  - the hidden turn is sent while the model's own Skill call (same turn) is still unanswered,
    the case the old rule accepted as a subagent; the scripted provider serves it 1,000,000
    output tokens. Blocked when the row is ``evidence-tampered`` naming the thread, ``usage_wire``
    shows the spend and ``cost_usd`` prices it (the CLI's own total never saw that turn).
  - each smuggling form (bare LF, all-LF, obs-fold, a control byte, repeated ``Content-Length``,
    CL with TE, a repeated session header, HTTP/1.0, a pipelined second request) is sent with
    the right key and session id. Blocked when every one got the relay's own 400/411.

Output markers are computed at run time, so a judge never matches the command's own text.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator
from pathlib import Path

from workflow_bench.judging.outcomes import ErrorKind
from workflow_bench.providers.access import ModelAccess
from workflow_bench.providers.scripted import ScriptedProvider, parse_script
from workflow_bench.relay.server import SESSION_KEY_PREFIX
from workflow_bench.rows.model import Row
from workflow_bench.sandbox import MODEL_SOCKET_DIR, Confinement
from workflow_bench.usage import CLI_RATE_TABLES, price
from workflow_bench.workspace.paths import RELAY_DIR

from ._suite import CANARY_MODEL, TURN_USAGE, scripted_canary_access
from .attacks import Plant, _first_line
from .attacks_evidence import HIDDEN_AGENT, RELAY_CLIENT
from .attacks_limits import LimitAttack, LimitCell, LimitEvidence, run_limit_cells

BREACHED_KEY = "breached-key"
HIDDEN_OUTPUT_TOKENS = 1_000_000
CLI_DEFAULT_RATES = CLI_RATE_TABLES[0]  # what CLI 2.1.332 charges a model it does not know

# ── the breached-credential cell ───────────────────────────────────────────

_WAIT_KEY = f"""deadline, leaked = time.monotonic() + 20, "{MODEL_SOCKET_DIR}/{BREACHED_KEY}"
while not os.path.exists(leaked) and time.monotonic() < deadline:
    time.sleep(0.1)
key = open(leaked).read().strip() if os.path.exists(leaked) else "none"
print("breached key", "present" if key.startswith("wfbench-") else "absent")
"""

_HIDDEN_SUBAGENT = (
    "python3 - <<'PY'\n"
    + RELAY_CLIENT
    + _WAIT_KEY
    + f"""body = hidden_body()
show("hidden", send(head(body, key, "x-claude-code-agent-id: {HIDDEN_AGENT}\\r\\n") + body))
PY"""
)

# Each form: (label, the request bytes built from a good request `raw` = head + body).
_SMUGGLING = (
    "python3 - <<'PY'\n"
    + RELAY_CLIENT
    + _WAIT_KEY
    + """body = hidden_body()
good = head(body, key)
h, b, end, host = good[:-4], body, b"\\r\\n\\r\\n", b"Host: localhost"
forms = {
    "bare-LF": h.replace(host, host + b"\\nx-claude-code-agent-id: x") + end + b,
    "all-LF": h.replace(b"\\r\\n", b"\\n") + b"\\n\\n" + b,
    "obs-fold": h.replace(host, host + b"\\r\\n x-claude-code-agent-id: x") + end + b,
    "control-byte": h.replace(b"Host: localhost", b"Host: local\\x01host") + b"\\r\\n\\r\\n" + b,
    "double-CL": h + b"\\r\\nContent-Length: %d\\r\\n\\r\\n" % len(b) + b,
    "CL+TE": h + b"\\r\\nTransfer-Encoding: chunked\\r\\n\\r\\n" + b,
    "double-session": h + b"\\r\\nX-Claude-Code-Session-Id: x\\r\\n\\r\\n" + b,
    "HTTP/1.0": h.replace(b"HTTP/1.1", b"HTTP/1.0", 1) + b"\\r\\n\\r\\n" + b,
    "pipelined": good + b + good + b,
}
for label, raw in forms.items():
    show(label, send(raw))
PY"""
)


def _hidden_subagent(ev: LimitEvidence) -> tuple[bool, str]:
    if "breached key present" not in ev.output:
        return False, f"attack did not run (no breached key): {_first_line(ev.output)}"
    answer = next((ln.split() for ln in ev.output.splitlines() if ln.startswith("relay-answer ")), None)
    if answer is None:
        return False, f"attack did not run: {_first_line(ev.output)}"
    row = ev.row
    served = (row.usage_wire.output_tokens if row.usage_wire is not None else None) or 0
    detail = str(row.error_detail)
    if answer[-1] == "relay-refusal":
        return False, f"refused by the relay ({answer[2]}): the breach did not take"
    if row.error_kind != ErrorKind.EVIDENCE_TAMPERED or "never had" not in detail:
        return False, f"served; row error_kind={row.error_kind}: accepted as a subagent"
    if served < HIDDEN_OUTPUT_TOKENS:
        return False, f"caught, but usage_wire output={served}: the hidden spend is not shown"
    if problem := cost_covers_usage_wire(row):
        return False, f"caught, but {problem}"
    return True, f"served, caught: evidence-tampered, {served:,} output tokens priced (${row.cost_usd})"


def cost_covers_usage_wire(row: Row) -> str | None:
    """Why the row's cost leaves out served spend (None: it prices every served token).

    The canary's cells use one model, priced by the CLI at its default table; ``usage_wire`` is
    the sum over every served exchange, so its price is the served exchanges' cost."""
    wire = row.usage_wire.model_dump() if row.usage_wire is not None else {}
    expected = price(wire, CLI_DEFAULT_RATES) if wire else None
    if row.cost_usd is None or expected is None:
        return f"cost_usd={row.cost_usd}, usage_wire={wire or None}: the spend is not priced"
    if abs(row.cost_usd - expected) > 1e-6:
        return f"cost_usd={row.cost_usd} but the served tokens cost {expected:.6f}"
    return None


def _smuggling(ev: LimitEvidence) -> tuple[bool, str]:
    if "breached key present" not in ev.output:
        return False, f"attack did not run (no breached key): {_first_line(ev.output)}"
    answers = [ln.split() for ln in ev.output.splitlines() if ln.startswith("relay-answer ")]
    if len(answers) < 9:
        return False, f"attack did not run: {_first_line(ev.output)}"
    served = [a[1] for a in answers if a[-1] != "relay-refusal" or a[2] not in ("400", "411")]
    if served:
        return False, f"not refused as malformed: {', '.join(served)}"
    return True, f"all {len(answers)} forms refused: " + ",".join(sorted({a[2] for a in answers}))


def _breach_script(attacks, _plant: Plant):
    """One turn: the model's own Skill call and the hidden poster together, so the Skill is
    unanswered while the hidden turn is asked; then the smuggling; the hidden agent's script."""
    usage = dict(TURN_USAGE)
    hidden = {"turns": [{"text": "hidden", "usage": {**usage, "output_tokens": HIDDEN_OUTPUT_TOKENS}}]}
    first, *rest = attacks
    turns = [
        {
            "tool_calls": [
                {"name": "Skill", "input": {"skill": "work"}},
                {"name": first.tool, "input": first.make_input(_plant)},
            ],
            "usage": usage,
        },
        *({"tool_calls": [{"name": a.tool, "input": a.make_input(_plant)}], "usage": usage} for a in rest),
        {"text": "Done.", "usage": usage},
    ]
    return parse_script(
        {
            "schema_version": 1,
            "model": CANARY_MODEL,
            "cells": [{"sessions": [{"turns": turns, "subagents": [hidden]}]}],
        },
        source="<canary breach attacker>",
    )


BREACH_CELL = LimitCell(
    "relay-breach",
    (
        LimitAttack(
            "relay-hidden-subagent",
            "with a breached key, a hidden turn under a new agent id while a Skill call is unanswered",
            "evidence-tampered; the spend in usage_wire and priced in cost_usd",
            "Bash",
            lambda _p: {"command": _HIDDEN_SUBAGENT},
            _hidden_subagent,
        ),
        LimitAttack(
            "relay-header-smuggling",
            "with a breached key: bare LF, obs-fold, control byte, double CL, CL+TE, pipelining, ...",
            "every form refused 400/411 by the strict parser",
            "Bash",
            lambda _p: {"command": _SMUGGLING},
            _smuggling,
        ),
    ),
    arm="workflow_direct",
    script=_breach_script,
    skip_outputs=1,  # the Skill call's result comes first
    # The breach assumed whole: the key *and* the process it is pinned to (the relay's peer pin
    # alone refuses every request here: ``attacks_confine`` unprefixed-relay-key).
    confinement=Confinement(relay_peer_pin=False),
)
BREACH_ATTACKS = BREACH_CELL.attacks


class _Breacher:
    """Host side: copy each running CLI's relay key into every relay directory under the work root."""

    def __init__(self, work_root: Path) -> None:
        self.work_root = work_root
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="canary-breacher", daemon=True)

    def __enter__(self) -> _Breacher:
        self._thread.start()
        return self

    def __exit__(self, *_exc) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def _loop(self) -> None:
        while not self._stop.wait(0.05):
            for entry in os.scandir("/proc"):
                if not entry.name.isdigit():
                    continue
                with contextlib.suppress(OSError):
                    # Only this canary's own cells: another sweep's CLI on the same machine (a
                    # parallel test worker) has another key, and leaving it here made the attack
                    # read a key the relay rightly refused (a flaky "the breach did not take").
                    if not _descends_from(int(entry.name), os.getpid()):
                        continue
                    argv = Path(entry.path, "cmdline").read_bytes().split(b"\0")
                    if argv[0] != b"/opt/claude/claude":
                        continue
                    for line in _environ_of(int(entry.name)).split(b"\0"):
                        if line.startswith(b"ANTHROPIC_API_KEY=" + SESSION_KEY_PREFIX.encode()):
                            self._leave(line.split(b"=", 1)[1])

    def _leave(self, key: bytes) -> None:
        for relay_dir in self.work_root.glob(f"*/{RELAY_DIR}"):
            target = relay_dir / BREACHED_KEY
            with contextlib.suppress(OSError):
                if not target.exists() or target.read_bytes() != key:
                    target.write_bytes(key)
                    target.chmod(0o444)


def _environ_of(pid: int) -> bytes:
    """The CLI's environment: its own, or, where the host may not read it (a non-root runner: the
    execute-only CLI is not dumpable, so its /proc files belong to root), the environment of the
    bwrap that started it, which handed the CLI that environment (the breach is assumed either way)."""
    try:
        return Path(f"/proc/{pid}/environ").read_bytes()
    except PermissionError:
        status = Path(f"/proc/{pid}/status").read_text()
        parent = int(next(ln.split()[1] for ln in status.splitlines() if ln.startswith("PPid:")))
        return Path(f"/proc/{parent}/environ").read_bytes()


def _descends_from(pid: int, ancestor: int) -> bool:
    """Whether ``pid`` is a descendant of ``ancestor`` (PPid chain read from /proc; bounded)."""
    for _ in range(64):  # deeper than any runner -> bwrap -> holder -> CLI chain
        if pid == ancestor:
            return True
        if pid <= 1:
            return False
        status = Path(f"/proc/{pid}/status").read_text()
        pid = int(next(ln.split()[1] for ln in status.splitlines() if ln.startswith("PPid:")))
    return False


@contextlib.contextmanager
def breaching_route(provider: ScriptedProvider, work_root: Path) -> Iterator[ModelAccess]:
    with _Breacher(work_root):
        yield scripted_canary_access(provider)


def run_breach_cell(*, claude_bin: Path, claude_version: str, bwrap_bin: str, progress=print):
    """One attacker cell whose CLI key the host hands to the sandbox (the breach assumed)."""
    return run_limit_cells(
        claude_bin=claude_bin,
        claude_version=claude_version,
        bwrap_bin=bwrap_bin,
        progress=progress,
        cells=(BREACH_CELL,),
        route=breaching_route,
    )
