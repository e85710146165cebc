"""The store: repro fixtures on disk, and the example database campaigns share.

:mod:`.fixtures` (the JSON repro fixture store: schema, strict loading that
executes nothing, atomic writing named by content hash) and
:mod:`.shared_db` (a campaign's example database shared through Redis). May
import :mod:`compaction_harness.spec`, :mod:`compaction_harness.envs` and,
from the drivers, the case types and the known-fault views a fixture names
(:mod:`compaction_harness.sdk.python`, lazily
:mod:`compaction_harness.sdk.js`); never the surfaces.
"""
