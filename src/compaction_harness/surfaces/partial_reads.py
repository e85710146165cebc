"""What ``check`` says of an app that reads sessions partially
(``check --recent-events N``: the app passes
``RunConfig(get_session_config=GetSessionConfig(num_recent_events=N))`` to
``Runner.run_async``): :func:`read_warnings`. Imports only
:mod:`compaction_harness.spec`.
"""

from __future__ import annotations

from ..spec.scripts import ScriptConfig

__all__ = ["EVENTS_PER_TURN", "read_warnings"]

#: The fewest events an invocation stores: the user's message and the reply.
EVENTS_PER_TURN = 2


def read_warnings(config: ScriptConfig) -> list[str]:
    """Warnings of a partial read (``recent_events``: ``GetSessionConfig``'s
    ``num_recent_events``, "returns at most given number of recent events",
    google-adk 2.13.0 ``sessions/base_session_service.py``).

    Each request loads only the latest N stored events; the prompt holds
    nothing older, and a summary stands for older turns only while it is
    among those N. By the definitions (``docs/invariants.md``, partial
    reads) what the read leaves out is the configuration's doing, not a loss
    by compaction, and the invariants do not report it: these warnings do,
    from what each trigger documents (``EventsCompactionConfig`` and
    ``apps/compaction.py``'s docstrings, 2.13.0):

    * sliding window: a summary covers its own window of invocations and a
      later one does not take it in, so the prompt keeps every summary and a
      read of N events drops the oldest as the session grows, whatever N;
      below ``2 * (compaction_interval - 1) + 1`` events (that many
      invocations of a message and a reply stored after the newest summary)
      it misses even the newest;
    * token threshold: a summary supersedes the previous one and keeps the
      latest ``event_retention_size`` (R) raw events, stored before it, so a
      read of at most R events never holds both; and compaction runs only
      once the loaded events' prompt passes ``token_threshold``, so a read
      whose events stay below it drops older turns itself, unsummarised.
    """
    n = config.recent_events
    if n is None:
        return []
    if n == 0:
        return [
            "recent_events 0 loads no event of the session: every request starts from an "
            "empty history, and neither compaction nor the model sees an earlier turn"
        ]
    out = []
    interval = config.compaction_interval
    if interval is not None:
        need = EVENTS_PER_TURN * (interval - 1) + 1
        worse = (
            f"; below {need} events (the {interval - 1} finished invocations of a message "
            "and a reply stored after the newest summary, and the summary) it misses even "
            "the newest summary"
            if n < need
            else ""
        )
        out.append(
            f"recent_events {n} with a sliding window: each request loads only the latest "
            f"{n} events, and a sliding-window summary stands only for its own invocations "
            "(the next one does not take it in), so the prompt keeps every summary and the "
            "oldest fall out of the read as the session grows: the model forgets the "
            f"earliest turns, with no summary of them in the prompt{worse}"
        )
    retention = config.event_retention_size
    threshold = config.token_threshold
    if threshold is not None and retention is not None and n <= retention:
        out.append(
            f"recent_events {n} is no more than event_retention_size {retention}: a "
            f"token-threshold summary keeps the latest {retention} raw events and is stored "
            f"after them, so no request's latest {n} events hold both, and the model loses "
            "what the summary stood for"
        )
    elif threshold is not None:
        out.append(
            f"recent_events {n} with token_threshold {threshold}: compaction runs only once "
            f"the loaded events' prompt passes {threshold} tokens; while the latest {n} "
            "events take fewer, the read itself drops the older turns, with no summary of "
            "them (the read must hold more events than the session gathers below the "
            "threshold)"
        )
    return out
