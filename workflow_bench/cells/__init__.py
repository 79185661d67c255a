"""One cell = one task × arm × run: shared inputs, the workspace, the sessions, the row.

Modules: ``context`` (SweepSettings, per-task template, CellResult), ``workspace`` (templates,
clones, snapshots, patch/churn), ``sessions`` (CLI argv, stream-json parsing, skill evidence),
``stream_usage`` (usage from captured streams), ``run`` (run_cell), ``rows`` (row parts).
"""
