"""The drivers: what runs the specification's cases on each SDK.

:mod:`.python` runs them on google-adk (PyPI ``google-adk``) in this
process; :mod:`.js` on ADK for TypeScript (``@google/adk``), through the Node
driver ``sdks/adk-js/driver.mjs``. Only ``sdk.python`` imports
``google.adk``; only ``sdk.js`` talks to Node. A driver protocol and a
registry of drivers, which verdicts, the store, the command line and the
pytest plugin will ask instead of naming an SDK, are to live here. The
drivers may import :mod:`compaction_harness.spec` and
:mod:`compaction_harness.faults`, never the store or the surfaces.
"""
