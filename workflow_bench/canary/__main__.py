import sys

from workflow_bench.canary._main import main
from workflow_bench.sandbox import enter_private_mounts

enter_private_mounts()  # before any thread: the cells' overlay clones (non-root)
sys.exit(main())
