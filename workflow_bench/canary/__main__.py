import sys

from workflow_bench.canary._main import main

sys.exit(main())
