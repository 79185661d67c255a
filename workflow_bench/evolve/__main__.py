"""`python -m workflow_bench.evolve` (see ``cli``)."""

import sys

from workflow_bench.evolve.cli import main

sys.exit(main())
