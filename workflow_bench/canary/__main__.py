import sys

from workflow_bench.sandbox import enter_private_mounts

enter_private_mounts()  # before any thread: the cells' overlay clones (non-root)
from workflow_bench.canary._main import main  # noqa: E402

sys.exit(main())
