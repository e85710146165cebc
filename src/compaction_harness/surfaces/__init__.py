"""What users run: the command line, the pytest plugin, and the reports and exports behind them.

:mod:`.cli` (``python -m compaction_harness``), :mod:`.pytest_plugin`
(profiles, fixture writing, time-budgeted campaigns), :mod:`.verdicts` and
:mod:`.checks` (one classification of failures for every surface),
:mod:`.switch` (``FIXES=``), :mod:`.export`, :mod:`.export_head`,
:mod:`.export_pipeline`, :mod:`.export_trace`, :mod:`.export_helpers` and
:mod:`._pysource` (fixtures as tests for adk-python's suite),
:mod:`.minimize`, :mod:`.profile`, :mod:`.matrix` (the release matrix),
:mod:`.cross_sdk` and :mod:`.fault_headers` (the generated text of
``docs/drivers.md`` and ``docs/known-faults.md``), :mod:`.fault_pages` (the
fault catalogue as Markdown pages, ``docs/faults/``), :mod:`.coverage_report`,
:mod:`.app_check` and :mod:`.partial_reads` (``check``: an app of the user's).
The top of the package: may import every other part; only
``compaction_harness.__main__`` imports it.
"""
