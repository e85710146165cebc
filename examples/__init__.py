"""Example ADK apps to check with ``python -m compaction_harness check`` (see the README)."""
