"""The results.jsonl row: its schema (every field, its meaning, the version) and its documentation."""
