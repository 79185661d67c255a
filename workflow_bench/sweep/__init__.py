"""One sweep: its validated input (``config``), its plan (``plan``), and the driver that runs it (``driver``).

bound tasks → ``SweepPlan`` (cells, resumed and reused rows, priorities; ``--dry-run`` prints it) →
``SweepDriver`` (cells on the scheduler, each row persisted in plan order) → every report.
"""
