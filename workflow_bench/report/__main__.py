"""`python -m workflow_bench.report DIR`: re-render a sweep's reports from its directory."""

import sys

from workflow_bench.reports.rerender import main

sys.exit(main())
