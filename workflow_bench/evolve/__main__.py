"""`python -m workflow_bench.evolve` (see ``cli``)."""

import sys

from workflow_bench.sandbox import enter_private_mounts

enter_private_mounts()  # before any thread: the cells' overlay clones (non-root)
from workflow_bench.evolve.cli import main  # noqa: E402

sys.exit(main())
