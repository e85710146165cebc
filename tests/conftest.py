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

#: The order the gate hands the folders' items out in: the longest first, so
#: that pytest-xdist (``--maxschedchunk=1``: one item at a time, in this
#: order, as workers free up) gives no worker a long item when the others
#: are nearly done; the many short items of the fast folder fill the end.
#: Folders not named here come before ``fast``. The properties (``property``)
#: come before all of them, whatever their folder: the tests marked
#: ``gate_last`` read the labels their gate runs leave (``gate_labels``), and
#: run them again when a property has not finished. The plugin then moves the
#: items marked ``gate_first`` to the front and ``gate_last`` to the end.
GATE_ORDER = ("slow", "quality", "conformance", "corpus", "fast")


def pytest_collection_modifyitems(config, items) -> None:
    from compaction_harness.surfaces.pytest_plugin import gate_run

    if not gate_run(config):
        return

    def place(item) -> float:
        if item.get_closest_marker("property"):
            return -1
        try:
            folder = Path(item.path).resolve().relative_to(TESTS).parts[0]
        except ValueError:
            return len(GATE_ORDER)
        if folder in GATE_ORDER:
            return GATE_ORDER.index(folder)
        return GATE_ORDER.index("fast") - 0.5

    items.sort(key=place)  # stable: collection order within a folder
