"""Containment canary: preflight plus an escape suite run by a scripted attacker.

Public surface: ``main`` (the ``python -m workflow_bench.canary`` command),
``run_suite`` and ``render_table``, ``declared_attacks`` (every suite's attacks, by name); the
attack table lives in ``attacks``.
"""

from workflow_bench.canary._main import declared_attacks, main, run_canary
from workflow_bench.canary._suite import AttackVerdict, render_table, run_suite

__all__ = ["AttackVerdict", "declared_attacks", "main", "render_table", "run_canary", "run_suite"]
