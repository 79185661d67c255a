"""Scheduling cells: Executor-based pool with an in-order outage breaker.

Modules: ``pool`` (run_cells, SweepOutcome).
"""
