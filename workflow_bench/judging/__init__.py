"""Judging a cell: failure attribution, the outcome-report contract, the harness-owned patch view."""
