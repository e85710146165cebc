"""The exporter's layout rules (``surfaces/_pysource.py``), on shapes pyink
was seen to lay out (``tests/slow/test_export.py`` runs pyink itself on every
export; these pin the rules it found, without pyink)."""

from __future__ import annotations

from compaction_harness.surfaces._pysource import Atom, call, render

ID = "'e-a914819f-8ca1-790d-b914-81e56167a7e1'"


def test_a_keyword_argument_too_long_for_its_line_is_wrapped_in_parentheses():
    # As pyink (adk-python's settings, `unstable = true`) wrote it: a drawn
    # export with a rewind held the value on one 82-column line.
    actions = call("EventActions", rewind_before_invocation_id=Atom(ID))
    assert render(actions, " " * 12, "actions=", ",") == [
        " " * 12 + "actions=EventActions(",
        " " * 16 + "rewind_before_invocation_id=(",
        " " * 20 + ID,
        " " * 16 + ")",
        " " * 12 + "),",
    ]
    two = call("EventActions", author=Atom("'user'"), rewind_before_invocation_id=Atom(ID))
    assert render(two, " " * 12)[2:5] == [
        " " * 16 + "rewind_before_invocation_id=(",
        " " * 20 + ID,
        " " * 16 + "),",
    ]


def test_a_positional_argument_too_long_stays_on_its_own_line():
    long = Atom(ID[:-1] + "-" + ID[1:])
    assert render(call("call", long), " " * 8) == [
        " " * 8 + "call(",
        " " * 12 + long.text,
        " " * 8 + ")",
    ]


def test_what_fits_stays_on_one_line():
    assert render(call("EventActions", rewind_before_invocation_id=Atom("'e-1'"))) == [
        "EventActions(rewind_before_invocation_id='e-1')"
    ]
