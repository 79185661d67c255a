"""One cell = one task × arm × run: shared inputs, the workspace, the sessions, the row.

Modules: ``context`` (SweepSettings, per-task template, CellResult), ``workspace`` (templates,
clones, snapshots, patch/churn), ``sessions`` (CLI argv, stream-json parsing, skill evidence),
``stream_usage`` (usage from captured streams), ``evidence`` (the wire record as evidence of
record, the stream cross-checked against it), ``run`` (run_cell), ``rows`` (row parts),
``paths`` (fixed-length cell directories under a pid-named work root, stale-root collection).
"""
