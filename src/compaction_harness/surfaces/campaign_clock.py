"""A campaign item's clock (the pytest plugin's): rounds until the item's
slice of the budget is spent, shrinking until the campaign's end, and the
seed of each round of a seeded campaign. Imports nothing of the package."""

from __future__ import annotations

import functools
import hashlib
import time

__all__ = ["_BudgetSpent", "_Clock", "_round_seed"]


class _BudgetSpent(BaseException):
    """Ends a Hypothesis run at once when the campaign's budget says so.

    Hypothesis has no API to end a run early; an exception that is not an
    ``Exception`` is not a failure to it and leaves its run as it stands
    (what it has found and shrunk so far is already in the example
    database). Raised only by :class:`_Clock` and caught by the plugin."""


class _Clock:
    """One campaign item's time: rounds until the item's slice is spent, and
    shrinking until the campaign's end at the latest.

    Wraps the @given test's ``inner_test`` (Hypothesis's documented hook for
    wrapping what runs each example):

    * with no failure in hand and the item's time up, the round ends at its
      next example (:class:`_BudgetSpent`), before Hypothesis spends time
      drawing more. The first example of each round always runs: it is where
      Hypothesis replays a failure saved in the example database, and an
      example that passes there is deleted from the database;
    * with a failure in hand (Hypothesis is shrinking it) and the campaign's
      time up, the run ends at the next candidate, and the smallest failure
      seen so far (the last one: every candidate the shrinker tries is
      smaller than the failure in hand) is the item's failure, with
      ``cut_short`` set. Hypothesis has saved it in the example database, and
      the next campaign continues shrinking from there. Ending the run, not
      only skipping candidates, matters: drawing a pipeline script takes tens
      of milliseconds, and the shrinker tries thousands.
    """

    def __init__(self, item_end: float, campaign_end: float, on_first_failure=None) -> None:
        self.on_first_failure = on_first_failure
        self.item_end = item_end
        self.campaign_end = campaign_end
        self.failure: BaseException | None = None
        #: When the first failing example ran (``time.time()``; None: none yet).
        self.first_failure_at: float | None = None
        self.cut_short = False
        self.executed = 0
        self.round_begins = False

    def start_round(self) -> None:
        self.round_begins = True

    def wrap(self, inner):
        @functools.wraps(inner)
        def timed(*args, **kwargs):
            now = time.time()
            if self.failure is not None:
                if now >= self.campaign_end:
                    self.cut_short = True
                    raise _BudgetSpent
            elif now >= self.item_end and not self.round_begins:
                raise _BudgetSpent
            self.round_begins = False
            self.executed += 1
            try:
                return inner(*args, **kwargs)
            except Exception as exc:
                # The failure being shrunk (another kind met while shrinking is not it).
                if self.failure is None or type(exc) is type(self.failure):
                    if self.first_failure_at is None:
                        self.first_failure_at = time.time()
                        if self.on_first_failure is not None:
                            self.on_first_failure(self.first_failure_at)
                    self.failure = exc
                raise

        return timed

    @property
    def over(self) -> bool:
        return time.time() >= self.item_end


def _round_seed(forced: object, nodeid: str, round_number: int) -> int:
    """The seed of one round of a campaign item under ``--hypothesis-seed``:
    a function of the seed, the item and the round, so that a seeded
    campaign draws the same examples on every run (as far as its clock
    lets the same rounds run) and no two rounds or items draw the same."""
    digest = hashlib.sha256(f"{forced}/{nodeid}/{round_number}".encode()).digest()
    return int.from_bytes(digest[:8], "big")
