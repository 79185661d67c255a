"""`python -m workflow_bench.promotion verify DIR` / `apply DIR --target TOOLKIT_DIR`."""

import sys

from workflow_bench.promotion.cli import main

sys.exit(main())
