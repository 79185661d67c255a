"""Entry point only: `python -m workflow_bench.promotion` (code lives in workflow_bench.reports.promotion)."""
