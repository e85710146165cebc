"""``python -m compaction_harness``: see :mod:`compaction_harness.cli`."""

import sys

from .cli import main

sys.exit(main())
