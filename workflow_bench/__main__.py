"""``python -m workflow_bench``: the front door (``workflow_bench.cli``), as ``workflow-bench``."""

import sys

from workflow_bench.cli import main

sys.exit(main())
