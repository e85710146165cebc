"""A property-based verification harness for Google ADK's event compaction.

The package is split into parts, one folder each, and each folder's
``__init__`` says what it holds and what it may import (``docs/internals.md``,
"Layout", lists the modules). From the bottom up:

* :mod:`compaction_harness.spec` -- the specification: session model,
  reference, invariants, script format (pure; imports nothing else),
* :mod:`compaction_harness.faults` -- the known upstream faults of both SDKs
  as data, and the rule that classifies a violation by fix,
* :mod:`compaction_harness.sdk` -- the drivers: ``sdk.python`` (google-adk,
  the only part that imports ``google.adk``) and ``sdk.js`` (ADK for
  TypeScript, the only part that talks to Node),
* :mod:`compaction_harness.store` -- the JSON repro fixtures and the shared
  example database,
* :mod:`compaction_harness.surfaces` -- what users run: the command line
  (``python -m compaction_harness``), the pytest plugin, verdicts, export,
  minimize, profile, the release matrix and the generated tables.

A part imports only the parts below it, save the exceptions its docstring
names, and the import graph (function-local imports included) has no cycle
(``tests/fast/test_project.py`` checks both).

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
