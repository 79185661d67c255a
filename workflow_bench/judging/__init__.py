"""Judging a finished cell: authored verify, the hidden oracle staged after exit, review scoring,
failure attribution, the outcome-report contract, the harness-owned patch view, and the
error-kind vocabulary every outcome is named from.

Modules: ``judge`` (run_verify, run_hidden_oracle, judge_review), ``outcomes`` (error kinds, who
is charged), ``attribution`` (session failures from the relay's record), ``outcome_report`` (proof
of success; ``kit/``, the judge runner and the framework adapters, is staged into the sandbox),
``junit`` (hardened JUnit XML parsing), ``verdict`` (the one verdict over every format), ``patch``
(patch and churn from a harness-owned git directory).
"""
