"""From rows to reports: per task × arm aggregation, token accounting, and the report.md renderer.

Modules: ``aggregate`` (aggregation, savings, arm health), ``accounting`` (three usage figures and
their disagreements), ``markdown`` (report.md), ``accounting_section`` (its token-accounting
section), ``provenance`` (sweep provenance shown in reports). Renderers are pure: they return text.
"""
