"""The results.jsonl row: the typed model (``model``), reading stored rows (``migrate``), its docs (``docs``).

``model.Row`` is every field, declared once in the part its writer owns; ``migrate`` turns stored
JSON (any schema version) into a ``Row``; ``docs`` generates docs/results-schema.md and .json.
"""
