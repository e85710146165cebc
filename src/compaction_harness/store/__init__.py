"""The store: repro fixtures on disk, and the example database campaigns share.

:mod:`.fixtures` (the JSON repro fixture store: schema, strict loading that
executes nothing, atomic writing named by content hash) and
:mod:`.shared_db` (a campaign's example database shared through Redis) and
:mod:`.servers` (the PostgreSQL and MariaDB servers that sessions of the
storage kinds ``postgresql`` and ``mariadb`` are kept in, started on
loopback for a test run, a campaign or a replay). May
import :mod:`compaction_harness.spec`, the package's root and
:mod:`compaction_harness.sdk.protocol` (the registry, which each fixture's
SDK is asked through: how its case is read and written, its known faults);
never an SDK's package, the fault catalogue or the surfaces.
"""
