"""The evolve driver: propose a skill overlay from evidence, benchmark it, promote only through the gate.

``python -m workflow_bench.evolve`` (``cli.main``). Modules by concern: ``args`` (flags and
their combinations), ``inputs`` (everything that can reject input, before anything runs),
``runtime_cap``, ``evidence`` (row selection and verified artifacts) and ``bundle`` (the
bounded read-only bundle), ``proposer`` (+ ``proposer_prompt``: the real CLI in bwrap over a
sanitized toolkit clone), ``overlay_freeze`` (validation and the frozen copy), ``bench`` (the
runner subprocess, verification, apply), ``generation`` (the loop) and ``learnings`` (the queue).
Sits above the runner: it invokes the runner as a subprocess and never edits a toolkit except
through ``promotion apply``.
"""
