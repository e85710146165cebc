"""Known upstream faults as data, each with its fix, and classification by fix.

A known fault is a record (id, SDK, family, invariants, title, what a user
sees) and a **fix**: a named patch of the SDK's own functions that follows
the specification. A violation is fault X when re-running the same case
with X's fix applied makes it vanish (same invariant, same call ids); when
only several fixes together remove it, it is all of them; when every fix
together leaves it, it is new (see ``../shared`` design, part 10).

* :mod:`.fixes` holds google-adk's fixes: replacement functions written in
  ADK's own module style (``patches/python/``), applied to the installed
  release for the length of a ``with`` block, and printable as a patch
  against the release's own source file.

May import: the specification modules and the adapter (``..adk``), lazily
the drivers (to re-run a case); never ``strategies`` or ``tests``.
"""
