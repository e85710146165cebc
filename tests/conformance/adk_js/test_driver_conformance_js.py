"""ADK-JS's driver keeps the driver protocol: the conformance suite
(``sdk/conformance.py``) on the ``adk-js`` driver, run with the ADK-JS gate
(``make test SDK=js``: it needs Node and ``@google/adk``); the suite and the
google-adk drivers are in ``tests/conformance/test_driver_conformance.py``."""

from __future__ import annotations

from test_driver_conformance import JS_CASES, check_driver


def test_the_adk_js_driver_passes_the_conformance_suite() -> None:
    check_driver("adk-js", *JS_CASES)
