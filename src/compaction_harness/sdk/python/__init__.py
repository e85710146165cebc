"""google-adk: the adapter, the drivers, the unit cases, and the fixes of its faults.

:mod:`.adk` (the adapter: the session model to real ``Event`` objects and
back, the installed release's helpers; it names every name of
:mod:`.adk_events`, :mod:`.adk_helpers`, :mod:`.adk_prompt` and
:mod:`.adk_pipeline`), :mod:`.unit` and :mod:`.metamorphic`
(unit-level cases, U1 to U6), :mod:`.pipeline` (a real session driven step
by step and checked with the pure checkers of P1 to P7, which live in
:mod:`compaction_harness.spec`; the P0 crash verdict), :mod:`.interpreter` (the one
interpreter of the script operations, whose backends the two drivers are),
:mod:`.driver` (the emulating driver; :mod:`.shortfall`, :mod:`.refusals`), :mod:`.adk_runner`
(ADK's own ``Runner``: :mod:`.runner_driver`, :mod:`.runner_app`,
:mod:`.runner_record`, :mod:`.runner_checks`), :mod:`.differential`
(the two compared), :mod:`.cases` (every case kind, by fixture ``kind``),
:mod:`.known_faults` (google-adk's view of the fault catalogue, with the
recognisers of faults that have no fix), :mod:`.triage` and :mod:`.reruns`
(classification by fix, after a run: a case re-run with fixes, through its
kind's runner; the runners run and record only, and import neither),
:mod:`.fixes`, :mod:`.python_fixes` and ``patches/`` (the fixes: diffs of
ADK's own source, and how they are applied), :mod:`.drivers`
(the ``emulated`` and ``runner`` drivers behind the driver protocol),
:mod:`.entry` (google-adk's entry of the registry of SDKs: its fixtures'
fields, kinds and cases, its known faults, its verdicts). The only part
of the package that imports ``google.adk`` (here, anywhere in a module). May
import :mod:`compaction_harness.spec`, :mod:`compaction_harness.faults` and
:mod:`compaction_harness.envs` and the protocol it implements
(:mod:`compaction_harness.sdk.protocol`,
:mod:`compaction_harness.sdk.generic`); never ``sdk.js`` (the two SDK
packages meet only in the specification: what both need lives in ``spec``),
the store or the surfaces.
"""
