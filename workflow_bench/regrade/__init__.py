"""Regrade: saved patches (a finished sweep's, or any agent's predictions) re-judged in clean rooms.

``source`` reads and refuses the input, ``judge`` judges one patch into a row
(``cells.cleanroom.judge_patch``), ``write`` lists the verdicts that changed, ``cli`` is
``python -m workflow_bench.regrade``.
"""
