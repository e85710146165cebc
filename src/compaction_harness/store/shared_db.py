"""A campaign's example database shared through Redis (``FUZZ_DB=redis://HOST:PORT/N``).

Campaigns on several machines (``make fuzz`` on one, ``make fuzz-worker`` on
the others) share their failures through Hypothesis's own engine: each
process's ``fuzz`` profile uses a :class:`hypothesis.database.MultiplexedDatabase`
of its local :class:`~hypothesis.database.DirectoryBasedExampleDatabase` and a
:class:`hypothesis.extra.redis.RedisExampleDatabase` keyed by the target ADK
release (``key_prefix=b"compaction-harness:adk-<release>:"``). A failing
example any process saves (Hypothesis saves every failure it shrinks to) is
fetched by every other process in the reuse phase of its next round. Nothing
here coordinates: no locks, no scheduler, no retries.

What this module adds is error handling, in :class:`TolerantDatabase`: a
Redis that goes away mid-campaign leaves the campaign on its local database,
and a Redis that refuses writes (full, read-only) is still read. Each such
problem is recorded once per process in :data:`PROBLEMS`; the plugin puts it
on the campaign items' reports and the campaign summary says it once.

The client: ``redis.Redis.from_url`` with 10 s socket timeouts and no
retries (a lost server is lost for the rest of the campaign).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable
from urllib.parse import urlsplit

from hypothesis.database import ExampleDatabase, MultiplexedDatabase

#: Seconds a Redis command may take (connecting, or waiting for a reply).
SOCKET_TIMEOUT = 10.0
SCHEMES = ("redis", "rediss")

#: The problems met in this process: kind (``"lost"``, ``"refuses writes"``)
#: -> one line saying what happened. The first of each kind is kept.
PROBLEMS: dict[str, str] = {}


class SharedDatabaseError(Exception):
    """A one-line, user-facing reason the shared database cannot be used."""


def key_prefix(release: str) -> bytes:
    """The Redis key prefix of one target release: campaigns against different
    releases share a server without meeting each other's examples."""
    return f"compaction-harness:adk-{release}:".encode()


def redacted(url: str) -> str:
    """``url`` as the harness prints it: a password in it is shown as ``***``
    (campaign summaries end up in CI logs)."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    user = parts.username or ""
    host = parts.netloc.rsplit("@", 1)[-1]
    return parts._replace(netloc=f"{user}:***@{host}").geturl()


def connect(url: str):
    """A ``redis.Redis`` client for ``url`` (``redis://HOST:PORT/N`` or
    ``rediss://...``); no connection is made yet. Raises
    :class:`SharedDatabaseError` for a malformed URL or a missing client."""
    parts = urlsplit(url)
    if parts.scheme not in SCHEMES or not parts.hostname:
        raise SharedDatabaseError(
            f"FUZZ_DB={redacted(url)}: not a Redis URL (expected redis://HOST:PORT/N)"
        )
    if not re.fullmatch(r"/?(\d+)?", parts.path):
        # redis-py would silently use database 0 for any other path.
        raise SharedDatabaseError(
            f"FUZZ_DB={redacted(url)}: the database {parts.path.lstrip('/')!r} is not a number "
            "(expected redis://HOST:PORT/N)"
        )
    try:
        import redis
        from redis.backoff import NoBackoff
        from redis.retry import Retry
    except ImportError:
        raise SharedDatabaseError(
            f"FUZZ_DB={redacted(url)}: the redis client is not installed (the project's "
            "`shared` extra; `make env` installs it)"
        ) from None
    try:
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number
        return redis.Redis.from_url(
            url,
            socket_timeout=SOCKET_TIMEOUT,
            socket_connect_timeout=SOCKET_TIMEOUT,
            retry=Retry(NoBackoff(), 0),
        )
    except ValueError as exc:
        raise SharedDatabaseError(f"FUZZ_DB={redacted(url)}: not a Redis URL ({exc})") from None


def check(url: str) -> None:
    """Connect to ``url`` and ``PING`` it once. Raises
    :class:`SharedDatabaseError` naming the URL and the problem (malformed,
    unreachable, refused, no such database number)."""
    from redis.exceptions import RedisError

    client = connect(url)
    try:
        client.ping()
    except RedisError as exc:
        raise SharedDatabaseError(f"FUZZ_DB={redacted(url)}: {_one_line(exc)}") from None
    finally:
        client.close()


def fuzz_database(local: ExampleDatabase, url: str | None, release: str) -> ExampleDatabase:
    """The ``fuzz`` profile's database: ``local`` alone without a URL, else
    ``MultiplexedDatabase(local, TolerantDatabase(RedisExampleDatabase(...)))``
    (local first: a failure is on disk before it is sent). Raises
    :class:`SharedDatabaseError` for a malformed URL."""
    if not url:
        return local
    from hypothesis.extra.redis import RedisExampleDatabase

    prefix = key_prefix(release)
    shared = RedisExampleDatabase(connect(url), key_prefix=prefix)
    return MultiplexedDatabase(local, TolerantDatabase(shared, url, prefix))


def _one_line(exc: BaseException) -> str:
    """``"ErrorClass: message"`` on one printable line of at most 200 characters,
    without the pipeline's echo of the command (its key is binary)."""
    text = str(exc).split(" of pipeline caused error: ")[-1]
    text = " ".join("".join(c if c.isprintable() else " " for c in text).split())
    return f"{type(exc).__name__}: {text}"[:200] if text else type(exc).__name__


class TolerantDatabase(ExampleDatabase):
    """An ``ExampleDatabase`` around a ``RedisExampleDatabase`` that never
    raises the Redis client's errors into a campaign.

    It mirrors Hypothesis's ``ExampleDatabase`` API (``fetch(key) ->
    Iterable[bytes]``, ``save``, ``delete``, ``move``; keys and values are
    bytes) and passes every call on, except:

    * a lost server (``redis.exceptions.ConnectionError`` or ``TimeoutError``):
      recorded once in :data:`PROBLEMS` as ``"lost"``, and from then on every
      call does nothing (``fetch`` finds nothing): the campaign goes on with
      the local database it is multiplexed with, which already holds every
      failure it saved;
    * a server that refuses writes (any other ``redis.exceptions.RedisError``
      on a write: ``READONLY`` of a replica, ``OOM`` of a full server,
      ``NOREPLICAS``): recorded once as ``"refuses writes"``; writes are
      skipped from then on and ``fetch`` reads the set without refreshing
      its expiry (``SMEMBERS`` alone), so the shared failures still arrive.

    ``db`` is the ``RedisExampleDatabase``, ``url`` its URL (for the reports),
    ``prefix`` its ``key_prefix``.
    """

    def __init__(self, db, url: str, prefix: bytes) -> None:
        super().__init__()
        self._db = db
        self.url = redacted(url)
        self._prefix = prefix  # the RedisExampleDatabase's key_prefix
        self.lost = False
        self.read_only = False

    def __repr__(self) -> str:
        return f"TolerantDatabase({self._db!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TolerantDatabase) and self._db == other._db

    def __hash__(self) -> int:
        return hash(self.url)

    def _failed(self, exc: Exception) -> None:
        from redis.exceptions import ConnectionError, TimeoutError

        if isinstance(exc, ConnectionError | TimeoutError) or self.read_only:
            # (a server that refuses even the plain read of a read-only one is lost too)
            self.lost = True
            PROBLEMS.setdefault(
                "lost",
                f"shared example database {self.url} lost during the campaign "
                f"({_one_line(exc)}): it went on with the local database only",
            )
        else:
            self.read_only = True
            PROBLEMS.setdefault(
                "refuses writes",
                f"shared example database {self.url} refuses writes ({_one_line(exc)}): "
                "failures found here are kept in the local database only; the shared "
                "failures are still read",
            )

    def fetch(self, key: bytes) -> Iterable[bytes]:
        from redis.exceptions import RedisError

        if self.lost:
            return []
        try:
            if self.read_only:
                return list(self._db.redis.smembers(self._prefix + key))
            return list(self._db.fetch(key))
        except RedisError as exc:
            self._failed(exc)
            return self.fetch(key)

    def _write(self, method: str, *args: bytes) -> None:
        from redis.exceptions import RedisError

        if self.lost or self.read_only:
            return
        try:
            getattr(self._db, method)(*args)
        except RedisError as exc:
            self._failed(exc)

    def save(self, key: bytes, value: bytes) -> None:
        self._write("save", key, value)

    def delete(self, key: bytes, value: bytes) -> None:
        self._write("delete", key, value)

    def move(self, src: bytes, dest: bytes, value: bytes) -> None:
        self._write("move", src, dest, value)


def main(argv: list[str] | None = None) -> int:
    """``python -m compaction_harness.store.shared_db URL``: exit 0 when the Redis at
    URL answers, else one line ``error: ...`` and exit 2."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print(
            "usage: python -m compaction_harness.store.shared_db redis://HOST:PORT/N",
            file=sys.stderr,
        )
        return 2
    try:
        check(args[0])
    except SharedDatabaseError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
