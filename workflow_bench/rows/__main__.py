"""`python -m workflow_bench.rows markdown|json-schema`: print a generated row-schema document."""

import sys

from workflow_bench.rows.docs import main

sys.exit(main())
