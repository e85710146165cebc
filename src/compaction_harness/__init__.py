"""A property-based verification harness for Google ADK's event compaction.

The package is split into these parts (the README's "Layout" lists them all):

* :mod:`compaction_harness.model` -- the ADK-independent session model,
* :mod:`compaction_harness.reference` -- the specification as brute-force code,
* :mod:`compaction_harness.adk` -- the only module that imports ``google.adk``,
* :mod:`compaction_harness.invariants` -- pure checkers returning violations,
* :mod:`compaction_harness.fixtures` -- the JSON repro fixture store,
* :mod:`compaction_harness.cli` -- ``python -m compaction_harness``.

Importing this package imports nothing outside the standard library, so the
environment bootstrapper (:mod:`compaction_harness.envs`) can run before any
dependency is installed.
"""

__all__ = ["DEFAULT_ADK_RELEASE", "__version__"]

__version__ = "0.1.0"

#: The google-adk release the harness targets by default. Keep in step with the
#: ``adk`` extra in ``pyproject.toml`` and ``ADK ?=`` in the Makefile (a test
#: checks all three agree).
DEFAULT_ADK_RELEASE = "2.13.0"
