"""The specification as code: the session model, the reference, the invariants, the case formats.

:mod:`.model` (the ADK-independent, immutable session model),
:mod:`.reference` (the project's definitions as brute-force code, never ADK's
algorithm), :mod:`.invariants` (the registry of invariants, the pure
unit-level checkers and the :class:`~.invariants.Violation` they return),
:mod:`.scripts` (the pipeline script format) and :mod:`.pipeline_case` (a
recorded session as a case). Pure: it imports nothing else of the package,
never ``google.adk`` and never Node; every other part may import it.
"""
