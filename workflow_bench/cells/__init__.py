"""One cell = one task × arm × run: shared inputs, the sessions, the evidence, the row.

Modules: ``context`` (SweepSettings, per-task template, CellResult), ``templates`` (one template
per task, built once), ``index`` (the toolkit's code-graph index on a template), ``sessions`` (CLI
argv, stream-json parsing, skill evidence), ``stream_usage`` (usage from captured streams),
``evidence`` (the wire record as evidence of record, the stream cross-checked against it),
``session_fold`` (an arm's sessions folded into the session layer of a row), ``run`` (run_cell),
``rows`` (row parts). Clones, snapshots, cell directories and the patch view are ``workspace/``'s.
"""
