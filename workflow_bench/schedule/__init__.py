"""Scheduling cells: which cell starts when, what stops a sweep, and what a resumed sweep keeps.

Modules: ``pool`` (the waves and packed schedulers: run_cells, SchedulePolicy, SweepOutcome),
``order`` (--order longest-first predictions), ``budget`` (--max-cost-usd, --max-runtime),
``not_run`` (not-run.jsonl and the report's Scheduling section), ``resume`` (sweep.lock.json
and the rows --resume keeps).
"""
