"""Known upstream faults of both SDKs, as data, and the rule that classifies a violation by fix.

A known fault is a record (id, SDK, family, invariants, title, what a user
sees) and a **fix**: a named patch of the SDK's own functions that follows
the specification. A violation is fault X when re-running the same case
with X's fix applied makes it vanish (same invariant, same call ids); when
only several fixes together remove it, it is all of them; when every fix
together leaves it, it is new (see ``../shared`` design, part 10).
:mod:`.catalogue` holds every known fault of both SDKs (its fixes and
releases derived, never typed) from the rows written by hand in
:mod:`.records_python` and :mod:`.records_js` (data modules that import
nothing), :mod:`.matrix_record` what it reads of the release matrix record,
:mod:`.classify` the rule, whatever the SDK. The
fixes themselves, and re-running a case with them, are the drivers'
(``sdk.python``: :mod:`~compaction_harness.sdk.python.fixes`,
:mod:`~compaction_harness.sdk.python.triage`; ``sdk.js``:
:mod:`~compaction_harness.sdk.js.js_fixes`). May import
:mod:`compaction_harness.spec`, and reads data: the committed matrix record,
the fixture corpus, ADK-JS's fix index (``sdks/adk-js/fixes/index.json``)
and google-adk's list of fixes
(:mod:`compaction_harness.sdk.python.python_fixes`, a data module that
imports nothing); never a driver, the store or the surfaces.
"""
