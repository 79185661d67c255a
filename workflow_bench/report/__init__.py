"""Entry point only: `python -m workflow_bench.report DIR` (code lives in workflow_bench.reports.rerender)."""
