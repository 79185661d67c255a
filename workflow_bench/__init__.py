"""workflow-bench."""
