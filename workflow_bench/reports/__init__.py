"""From rows to reports: aggregation, health, promotion, statistics and the md/html renderers.

Modules: ``aggregate`` (aggregation, savings, arm health), ``accounting`` (three usage figures and
their disagreements), ``markdown`` (report.md), ``accounting_section`` (its token-accounting
section), ``provenance`` (sweep provenance shown in reports), ``health`` (the measurement-health
lines and exit precedence), ``promotion/`` (gate, promotion.json, verify, apply), ``stats``
(paired statistics), ``html`` (report.html), ``sweep_record`` (sweep.json), ``render`` (every
report from results.jsonl + sweep.json), ``rerender`` (``python -m workflow_bench.report``).
Renderers are pure: they return text; only the sweep driver and ``rerender`` write files.
"""
