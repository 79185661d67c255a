import sys

from workflow_bench.view.server import main

sys.exit(main())
