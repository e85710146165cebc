"""``python -m compaction_harness``: see :mod:`compaction_harness.surfaces.cli`."""

import sys

from .surfaces.cli import main

sys.exit(main())
