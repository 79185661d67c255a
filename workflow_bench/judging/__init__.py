"""Judging a finished cell: authored verify, the hidden oracle staged after exit, review scoring,
and the error-kind vocabulary every outcome is named from.

Modules: ``judge`` (run_verify, run_hidden_oracle, judge_review), ``outcomes`` (error kinds and sets).
"""
