"""Promotion: the gate (policy, evidence, gate), promotion.json (document), verify and apply.

`python -m workflow_bench.promotion` is a thin entry point over `cli.main`.
"""
