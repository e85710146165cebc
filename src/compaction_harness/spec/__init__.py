"""The specification as code: the session model, the reference, the invariants, the case formats.

:mod:`.model` (the ADK-independent, immutable session model),
:mod:`.reference` (the project's definitions as brute-force code, never ADK's
algorithm), :mod:`.invariants` (the registry of invariants, the pure
unit-level checkers and the :class:`~.invariants.Violation` they return),
the pure pipeline checkers both SDKs' drivers call (:mod:`.pipeline_checks`:
P1, P5, P6, P7 and what they share; :mod:`.prompt_checks`: P2, P4;
:mod:`.liveness_checks`: P3; :mod:`.tool_runs`: each run of a tool's body
and P8), :mod:`.outcome` (what a run of a case
produced), :mod:`.scripts` (the pipeline script format) and
:mod:`.pipeline_case` (a recorded session as a case, and what it tells by
itself). Pure: it imports only itself and the standard library: no SDK
package (``sdk.python``, ``sdk.js``), not :mod:`compaction_harness.faults`
nor any other part, never ``google.adk`` and never Node; every other part
may import it, and it is where the two SDK packages meet.
"""
