"""`python -m workflow_bench.report DIR`: see ``report.cli``."""

import sys

from workflow_bench.report.cli import main

sys.exit(main())
