"""Negative controls of the sealing canary: each defence removed on purpose lets its attacks through.

The sealing attacks (``canary/attacks_sealing.py``) run as real cells, the real CLI in real
bubblewrap driven by the scripted model; here with defences taken out of the harness in this
process (the cells run in it): the sentinel tests (``judging.judge.add_sentinels``), the adapters'
claim on the result channel (a copy of the kit without it) or only its decoy (a copy whose claim
unlinks the path instead), the restore of the task's test
configuration (``cells.judges.restore``), the expected-tests lock and the per-process HOME (one
host directory bound at ``/home`` for every sandboxed process instead of a fresh tmpfs). The full canary
(test_canary.py) shows every attack blocked with every defence in place, each by the defence
meant for it (``held_as``); these show that defence is what held:

- without sentinels (and the adapters' framework guard, which alone catches the patched
  ``TestCase.run``), the attacks only they stop resolve the cell, while the channel claim (its
  decoy catching the forged lines as tampering) and the test-configuration restore still hold
  theirs alone;
- without the decoy as well, forged lines vanish unseen: an ordinary ``oracle-failed``;
- without those two as well (and, for invented ids, without the lock), their attacks resolve too;
- with the sentinels back but the claim and the restore still gone, the sentinels catch them;
- a forced exit 0 after an honest run is told apart from an honest failure by the sentinels alone
  (without them it is an ordinary ``oracle-failed``);
- with HOME kept across processes, a user-site ``.pth`` resolves the cell, or, with the sentinels
  in place, is caught by them;
- the sentinel-aware attacks (issue 31: no-op every test that does not look like a sentinel)
  resolve the cell against the old fixed-shape sentinels (``add_sentinels(fixed_shape=True)``)
  with the adapters' framework guard removed; the sentinels written as the oracle's own tests
  hold them alone (guard removed), and the guard alone holds the unittest ones (fixed-shape
  sentinels); stock pytest has no adapter, so there only the sentinels stand;
- the node sentinel-aware attack (``node:assert.strictEqual`` lying only for what the code under
  test just returned, the sentinels honest) resolves the cell with the JS framework guard's
  checks removed, and is ``evidence-tampered`` with them.
"""

from __future__ import annotations

import functools
import shutil
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import pytest

from workflow_bench.canary import sealing_payloads
from workflow_bench.canary.attacks_sealing import (
    SEALING_ATTACKS,
    SealingAttack,
    held_as_meant,
    run_sealing_suite,
)
from workflow_bench.cells.context import Harness
from workflow_bench.judging import outcome_report
from workflow_bench.judging.outcomes import ErrorKind
from workflow_bench.judging.sentinels import SentinelPlan, add_sentinels
from workflow_bench.sandbox import _bwrap

pytestmark = pytest.mark.e2e
BY_NAME = {a.name: a for a in SEALING_ATTACKS}
CLAIM = "    claim(fd, path)\n"
DECOY = "        os.rename(path + DECOY_SUFFIX, path)\n"
GUARD_FINDINGS = "        return found\n"
SENTINEL_AWARE = ("spare-sentinels-run", "spare-sentinels-swap", "spare-sentinels-pytest")


def _run(claude_bin, bwrap_bin, names, *, unlocked=()) -> dict[str, tuple[ErrorKind | None, bool]]:
    from workflow_bench.claude_cli import claude_version

    attacks = [BY_NAME[n] for n in names]
    attacks += [replace(BY_NAME[n], name=f"{n}-unlocked", locked=False) for n in unlocked]
    verdicts = run_sealing_suite(
        claude_bin=claude_bin,
        claude_version=claude_version(claude_bin),
        bwrap_bin=bwrap_bin,
        progress=lambda _line: None,
        attacks=attacks,
    )
    out = {}
    for verdict in verdicts:
        assert verdict.row is not None, verdict.observed  # every payload ran
        out[verdict.attack.name] = (verdict.row.error_kind, verdict.row.resolved)
    return out


def _without_sentinels(monkeypatch) -> None:
    monkeypatch.setattr(
        "workflow_bench.judging.judge.add_sentinels", lambda snapshot: (snapshot, SentinelPlan())
    )


def _kit_with(
    monkeypatch, tmp_path: Path, old: str, new: str, *, module: str = "wfbench_result_channel.py"
) -> None:
    """The judges use a copy of the kit whose ``module`` has ``old`` replaced by ``new``."""
    kit = tmp_path / "kit-changed"
    shutil.copytree(outcome_report.KIT, kit)
    channel = kit / module
    text = channel.read_text()
    assert text.count(old) == 1, f"{old.strip()!r} moved in the kit's {module}: update this control"
    channel.write_text(text.replace(old, new))
    monkeypatch.setattr(outcome_report, "KIT", kit)


def _without_decoy(monkeypatch, tmp_path: Path) -> None:
    """The claim unlinks the path and closes fd 9 (as without a runner decoy): no tripwire."""
    _kit_with(monkeypatch, tmp_path, DECOY, "        raise FileNotFoundError(path)\n")


def _with_fixed_shape_sentinels(monkeypatch) -> None:
    """The sentinels as they were: a bannered block appended under 16-hex-digit names."""
    monkeypatch.setattr(
        "workflow_bench.judging.judge.add_sentinels", functools.partial(add_sentinels, fixed_shape=True)
    )


def _without_guard(monkeypatch, tmp_path: Path) -> None:
    """The adapters' framework guard finds nothing, whatever changed."""
    _kit_with(
        monkeypatch, tmp_path, GUARD_FINDINGS, "        return []\n", module="wfbench_framework_guard.py"
    )


def _without_claim_and_restore(monkeypatch, tmp_path: Path) -> None:
    _kit_with(monkeypatch, tmp_path, CLAIM, "")
    monkeypatch.setattr("workflow_bench.cells.judges.restore", lambda *args, **kwargs: None)
    _without_clean_room(monkeypatch)  # it keeps the test configuration at the base's too


def _without_clean_room(monkeypatch) -> None:
    """The cells judge the workspace as left only (``Harness.clean_room`` off)."""
    monkeypatch.setattr("workflow_bench.canary._suite.Harness", functools.partial(Harness, clean_room=False))


def _persistent_home(monkeypatch, tmp_path: Path) -> None:
    """Every sandboxed process gets the same host directory at /home (the agent's session and the
    oracle share HOME), instead of a fresh sized tmpfs."""
    home = tmp_path / "home"
    home.mkdir(mode=0o1777)
    home.chmod(0o1777)  # each cell's own unprivileged uid writes there
    argv = _bwrap.BwrapSandbox.argv

    def shared_home(self, command: Sequence[str], *, policy) -> list[str]:
        args = argv(self, command, policy=policy)
        at = args.index("/home") - 3
        assert args[at : at + 4] == ["--size", str(_bwrap.HOME_SIZE_BYTES), "--tmpfs", "/home"], args
        return [*args[:at], "--bind", str(home), "/home", *args[at + 4 :]]

    monkeypatch.setattr(_bwrap.BwrapSandbox, "argv", shared_home)


def test_with_every_defence_each_attack_is_held_by_the_defence_meant_for_it(claude_bin, bwrap_bin) -> None:
    from workflow_bench.claude_cli import claude_version

    verdicts = run_sealing_suite(
        claude_bin=claude_bin,
        claude_version=claude_version(claude_bin),
        bwrap_bin=bwrap_bin,
        progress=lambda _line: None,
    )
    assert len(verdicts) == len(SEALING_ATTACKS) >= 11
    held = held_as_meant(verdicts)
    assert all(held.values()), [(v.attack.name, v.observed) for v in verdicts if not held[v.attack.name]]


def test_without_sentinels_their_attacks_resolve_and_the_other_defences_hold_alone(
    claude_bin, bwrap_bin, monkeypatch, tmp_path
) -> None:
    _without_sentinels(monkeypatch)
    _without_guard(monkeypatch, tmp_path)  # it alone holds patched-result-class (the unittest shim)
    rows = _run(
        claude_bin,
        bwrap_bin,
        (
            "patched-result-class",
            "forged-junit-exit",
            "junit-rewrite-at-exit",
            "forge-real-ids",
            "planted-conftest",
            "planted-sitecustomize",
            "config-addopts-plugin",
            "npmrc-node-options",
            "planted-user-pth",
            "forced-exit-0",
        ),
    )
    for name in ("patched-result-class", "forged-junit-exit", "junit-rewrite-at-exit"):
        assert rows[name] == (None, True), (name, rows[name])  # NOT BLOCKED: a forged resolve
    assert rows["forge-real-ids"] == (ErrorKind.EVIDENCE_TAMPERED, False)  # the decoy caught it
    held = ("planted-conftest", "planted-sitecustomize", "config-addopts-plugin")
    for name in (*held, "npmrc-node-options", "planted-user-pth"):
        assert rows[name] == (ErrorKind.ORACLE_FAILED, False), (name, rows[name])
    # The forced exit is no longer seen as forced: an honest-looking failure, not tampering.
    assert rows["forced-exit-0"] == (ErrorKind.ORACLE_FAILED, False)


def test_without_the_decoy_forged_lines_vanish_unseen(claude_bin, bwrap_bin, monkeypatch, tmp_path) -> None:
    _without_sentinels(monkeypatch)
    _without_decoy(monkeypatch, tmp_path)
    rows = _run(claude_bin, bwrap_bin, ("forge-real-ids",), unlocked=("forge-fake-ids",))
    for name in ("forge-real-ids", "forge-fake-ids-unlocked"):
        assert rows[name] == (ErrorKind.ORACLE_FAILED, False), (name, rows[name])


def test_without_the_claim_and_the_restore_too_their_attacks_resolve(
    claude_bin, bwrap_bin, monkeypatch, tmp_path
) -> None:
    _without_sentinels(monkeypatch)
    _without_claim_and_restore(monkeypatch, tmp_path)
    rows = _run(
        claude_bin,
        bwrap_bin,
        (
            "forge-real-ids",
            "planted-conftest",
            "planted-sitecustomize",
            "config-addopts-plugin",
            "npmrc-node-options",
            "forge-fake-ids",
        ),
        unlocked=("forge-fake-ids",),
    )
    through = ("forge-real-ids", "planted-conftest", "planted-sitecustomize", "config-addopts-plugin")
    for name in (*through, "npmrc-node-options", "forge-fake-ids-unlocked"):
        assert rows[name] == (None, True), (name, rows[name])
    # Invented ids against the lock: the expected tests are not reported.
    assert rows["forge-fake-ids"] == (ErrorKind.ORACLE_FAILED, False)


def test_with_only_the_sentinels_left_they_catch_what_the_claim_and_restore_held(
    claude_bin, bwrap_bin, monkeypatch, tmp_path
) -> None:
    _without_claim_and_restore(monkeypatch, tmp_path)
    names = ("forge-real-ids", "planted-conftest", "config-addopts-plugin", "npmrc-node-options")
    rows = _run(claude_bin, bwrap_bin, names, unlocked=("forge-fake-ids",))
    for name in (*names, "forge-fake-ids-unlocked"):
        assert rows[name] == (ErrorKind.EVIDENCE_TAMPERED, False), (name, rows[name])


@pytest.mark.parametrize("sentinels", [False, True], ids=["without-sentinels", "with-sentinels"])
def test_with_home_kept_across_processes_a_user_site_pth_gets_through(
    claude_bin, bwrap_bin, monkeypatch, tmp_path, sentinels
) -> None:
    _persistent_home(monkeypatch, tmp_path)
    if not sentinels:
        _without_sentinels(monkeypatch)
    rows = _run(claude_bin, bwrap_bin, ("planted-user-pth",))
    expected = (ErrorKind.EVIDENCE_TAMPERED, False) if sentinels else (None, True)
    assert rows["planted-user-pth"] == expected


@pytest.mark.parametrize(
    ("fixed_shape", "guard"),
    [(True, False), (False, False), (True, True)],
    ids=["fixed-shape-no-guard", "own-tests-sentinels-no-guard", "fixed-shape-with-guard"],
)
def test_sentinel_aware_attacks_against_each_defence_alone(
    claude_bin, bwrap_bin, monkeypatch, tmp_path, fixed_shape, guard
) -> None:
    if fixed_shape:
        _with_fixed_shape_sentinels(monkeypatch)
    if not guard:
        _without_guard(monkeypatch, tmp_path)
    rows = _run(claude_bin, bwrap_bin, SENTINEL_AWARE)
    tampered = (ErrorKind.EVIDENCE_TAMPERED, False)
    if fixed_shape and not guard:
        for name in SENTINEL_AWARE:  # NOT BLOCKED: the attacks tell the sentinels apart
            assert rows[name] == (None, True), (name, rows[name])
    elif not fixed_shape:
        for name in SENTINEL_AWARE:  # the sentinels alone: none was recognised
            assert rows[name] == tampered, (name, rows[name])
    else:
        assert rows["spare-sentinels-run"] == tampered  # the guard alone
        assert rows["spare-sentinels-swap"] == tampered
        assert rows["spare-sentinels-pytest"] == (None, True)  # stock pytest: no adapter, no guard


JS_GUARD_CHECK = "function check(where) {\n"


@pytest.mark.parametrize("guard", [True, False], ids=["with-js-guard", "without-js-guard"])
def test_the_node_sentinel_aware_attack_is_held_by_the_js_framework_guard(
    claude_bin, bwrap_bin, monkeypatch, tmp_path, guard
) -> None:
    """node:assert.strictEqual lies only for what the code under test just returned: the
    sentinels all come back as planned, so the JS framework guard alone holds it."""
    if not guard:  # it reports nothing, whatever changed
        _kit_with(
            monkeypatch,
            tmp_path,
            JS_GUARD_CHECK,
            JS_GUARD_CHECK + "  return;\n",
            module="wfbench_framework_guard.cjs",
        )
    rows = _run(claude_bin, bwrap_bin, ("spare-sentinels-node-assert",))
    held = (ErrorKind.EVIDENCE_TAMPERED, False) if guard else (None, True)  # None, True: NOT BLOCKED
    assert rows["spare-sentinels-node-assert"] == held


BYTECODE = ("bytecode-shadow", "bytecode-shadow-git-path")


def test_without_the_clean_room_bytecode_shadowing_resolves(claude_bin, bwrap_bin, monkeypatch) -> None:
    """Negative control of the clean room: judged on the workspace alone, the .pyc is the fix."""
    _without_clean_room(monkeypatch)
    rows = _run(claude_bin, bwrap_bin, BYTECODE)
    assert rows == {name: (None, True) for name in BYTECODE}  # NOT BLOCKED: a forged resolve


def test_oracle_verdicts_that_disagree_either_way_are_evidence_tampered(claude_bin, bwrap_bin) -> None:
    """Workspace passed, clean room failed (the fix only as bytecode), and the reverse (the fixed
    source shadowed by bytecode of the unfixed one): each a disagreement, charged."""
    from workflow_bench.claude_cli import claude_version

    reverse = SealingAttack(
        "bytecode-unfix",
        "the fixed source shadowed by a .pyc of the unfixed code (header = the fixed source's)",
        "clean room passes, the workspace fails: evidence-tampered",
        "unittest",
        (sealing_payloads.shadow_bytecode(hidden=False, reversed_=True),),
        ErrorKind.EVIDENCE_TAMPERED,
    )
    verdicts = run_sealing_suite(
        claude_bin=claude_bin,
        claude_version=claude_version(claude_bin),
        bwrap_bin=bwrap_bin,
        progress=lambda _line: None,
        attacks=[BY_NAME["bytecode-shadow"], reverse],
    )
    rows = {v.attack.name: v.row for v in verdicts}
    forward, backward = rows["bytecode-shadow"], rows["bytecode-unfix"]
    assert forward is not None and backward is not None
    assert (forward.oracle_passed, forward.cleanroom_oracle_passed) == (True, False)
    assert (backward.oracle_passed, backward.cleanroom_oracle_passed) == (False, True)
    for row in (forward, backward):
        assert row.error_kind == ErrorKind.EVIDENCE_TAMPERED and row.resolved is False, row.error_detail
