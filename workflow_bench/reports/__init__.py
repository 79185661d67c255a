"""From rows to reports: aggregation, health, statistics and the md/html renderers.

Modules: ``aggregate`` (aggregation, savings, arm health), ``accounting`` (three usage figures and
their disagreements), ``markdown`` (report.md), ``accounting_section`` (its token-accounting
section), ``provenance`` (sweep provenance shown in reports), ``health`` (the measurement-health
lines and exit precedence), ``stats`` (paired statistics), ``html`` (report.html),
``sweep_record`` (sweep.json). The promotion gate and promotion.json live in ``promotion/``, above
this package; ``workflow_bench.report`` composes both into every report of a sweep.
Renderers are pure: they return text; only the sweep driver and ``python -m
workflow_bench.report`` write files.
"""
