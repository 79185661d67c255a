"""``python -m workflow_bench.regrade``."""

import sys

from .cli import main

sys.exit(main())
