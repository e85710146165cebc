"""ADK for TypeScript (``@google/adk``): Node client, emulating mapping, recorded sessions, fixes.

:mod:`.adk_js` (the Node client, the mapping of scripts to the events
ADK-JS's ``Runner`` stores, the checks, ADK-JS's view of the fault
catalogue), :mod:`.adk_js_recorded` (recorded google-adk sessions replayed on
ADK-JS), :mod:`.differential_js` (the mapping against ADK-JS's own
``Runner``) and :mod:`.js_fixes` (ADK-JS's fixes, applied to a copy of the
package; their diffs live beside the Node driver, in ``sdks/adk-js/fixes/``)
and :mod:`.drivers` (the ``adk-js`` driver behind the driver protocol),
:mod:`.entry` (ADK-JS's entry of the registry of SDKs: its fixtures' fields
and case, its known faults, its verdicts).
The only part of the package that talks to Node (``sdks/adk-js/driver.mjs``).
May import :mod:`compaction_harness.spec`, :mod:`compaction_harness.faults`,
the protocol it implements (:mod:`compaction_harness.sdk.protocol`,
:mod:`compaction_harness.sdk.generic`) and,
from ``sdk.python``, the pure pipeline checkers
(:mod:`compaction_harness.sdk.python.pipeline`) and the outcome type
(:mod:`compaction_harness.sdk.python.unit`), which import ``google.adk``
only inside the functions that drive it; never ``google.adk`` itself.
"""
