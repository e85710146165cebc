"""The drivers: what runs the specification's cases on each SDK.

:mod:`.python` runs them on google-adk (PyPI ``google-adk``) in this
process; :mod:`.js` on ADK for TypeScript (``@google/adk``), through the Node
driver ``sdks/adk-js/driver.mjs``. Only ``sdk.python`` imports
``google.adk``; only ``sdk.js`` talks to Node. :mod:`.protocol` is the
driver protocol (a driver says whether it can run a case, runs it with a
set of its SDK's fixes, and returns a trace) and the registry of drivers
(``emulated``, ``runner``, ``adk-js``), and :mod:`.conformance` the suite
every registered driver passes; its second registry, of SDKs (google-adk's
``python/entry.py``, ADK-JS's ``js/entry.py``, each a :mod:`.generic`
``DriverSdk``), is what verdicts, the store, the command line and the
pytest plugin ask instead of naming an SDK. The drivers may import
:mod:`compaction_harness.spec` and :mod:`compaction_harness.faults`, never
the store or the surfaces, and neither SDK package imports the other:
what both need (the pipeline checkers, the outcome type) lives in
:mod:`compaction_harness.spec`; :mod:`.protocol` and :mod:`.conformance` import
:mod:`compaction_harness.spec` only (the registries import a driver's or an
SDK's module when asked for it), :mod:`.generic` the classification rule of
:mod:`compaction_harness.faults` too.
"""
