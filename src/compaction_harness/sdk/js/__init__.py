"""ADK for TypeScript (``@google/adk``): Node client, emulating mapping, recorded sessions, fixes.

:mod:`.node` (the Node client), :mod:`.timeline` (the script interpreter:
operations to the events ADK-JS's ``Runner`` stores), :mod:`.events` (steps
as ADK-JS events and back), :mod:`.case` (compactors and cases),
:mod:`.run` (a run and its record), :mod:`.checks` and :mod:`.trigger` (the
invariants over a run), :mod:`.triage` (classification by fix, ADK-JS's view
of the fault catalogue; no driver module imports it), :mod:`.adk_js` (the
public API, re-exported), :mod:`.adk_js_recorded` (recorded google-adk
sessions replayed on ADK-JS), :mod:`.differential_js` (the mapping against ADK-JS's own
``Runner``) and :mod:`.js_fixes` (ADK-JS's fixes, applied to a copy of the
package; their diffs live beside the Node driver, in ``sdks/adk-js/fixes/``)
and :mod:`.drivers` (the ``adk-js`` driver behind the driver protocol),
:mod:`.entry` (ADK-JS's entry of the registry of SDKs: its fixtures' fields
and case, its known faults, its verdicts).
The only part of the package that talks to Node (``sdks/adk-js/driver.mjs``).
May import :mod:`compaction_harness.spec` (the pipeline checkers both SDKs
share, :mod:`~compaction_harness.spec.pipeline_checks`,
:mod:`~compaction_harness.spec.prompt_checks` and
:mod:`~compaction_harness.spec.liveness_checks`, and the outcome type,
:mod:`~compaction_harness.spec.outcome`, included),
:mod:`compaction_harness.faults` and the protocol it implements
(:mod:`compaction_harness.sdk.protocol`,
:mod:`compaction_harness.sdk.generic`); never ``sdk.python`` (the two SDK
packages meet only in the specification), ``google.adk``, the store or the
surfaces.
"""
