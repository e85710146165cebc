"""The gate's tests, in folders by purpose (README.md, "The command line"):

- ``fast/``: no SDK run beyond ADK's pure helpers (the model, the reference,
  scripts, checkers on hand-made sessions, the store, docs, project rules,
  tables, argument parsing); ``make test-fast`` runs them alone, in seconds.
- ``slow/``: a real ``Runner``, a database, Redis, subprocesses, other
  releases; ``slow/adk_js/``: ADK-JS through Node.
- ``quality/``: the search itself: a campaign finds a planted or real fault
  and shrinks it to its minimum, and the gate's examples reach every shape.
- ``conformance/``: every registered driver keeps the driver protocol.
- ``corpus/``: the replay of every fixture in ``repros/``.

A folder named ``adk_js`` (in any of them) holds tests that need Node and
``@google/adk``: ``make test SDK=js`` runs those folders alone, ``make test``
everything else (the Makefile's ``ADKJS_TESTS``).

The helpers beside this file (``builders``, ``recorded_app``) and the test
modules of every folder are importable by name, as when the tests were one
folder: a test reads another's constants (``test_statistics`` runs
``test_unit_properties``' properties, ``test_cli`` reads ``test_fixtures``'
bad files).
"""

from __future__ import annotations

import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent

for folder in [TESTS, *sorted({p.parent for p in TESTS.glob("*/**/test_*.py")})]:
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))
