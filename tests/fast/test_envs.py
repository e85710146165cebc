"""The environment bootstrapper: one-line errors, no half-built environment left."""

from __future__ import annotations

import os
import signal

import pytest

from compaction_harness import envs


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--adk", "abc"], "error: google-adk release 'abc': not a release number"),
        (["--adk", "1.2.0"], "error: google-adk 1.2.0: event compaction exists only from 1.16.0"),
        (["--adk-src", "/no/such/adk"], "error: google-adk source /no/such/adk: no such directory"),
    ],
)
def test_bad_targets_get_one_line(argv, message, capsys):
    assert envs.main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(message) and err.count("\n") == 1


@pytest.mark.parametrize("stop", ["SIGINT", "SIGTERM"])
def test_a_stopped_install_leaves_no_environment(stop, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(envs, "VENVS", tmp_path)
    monkeypatch.setattr(envs, "ROOT", tmp_path)
    previous = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)}
    # Ctrl-C as a terminal delivers it, even where the gate runs as a background
    # job (whose shell has it ignore SIGINT).
    signal.signal(signal.SIGINT, signal.default_int_handler)
    half_built = tmp_path / "adk-2.13.0"

    def install(folder, label, requirement, log):
        (folder / "bin").mkdir(parents=True)  # a venv half made
        os.kill(os.getpid(), getattr(signal, stop))

    monkeypatch.setattr(envs, "_install", install)
    try:
        status = envs.main(["--adk", "2.13.0"])
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
    assert status == (130 if stop == "SIGINT" else 143)
    assert not half_built.exists()
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith("error: ") and "while creating the environment" in err


def test_every_environment_asks_for_what_the_database_round_trip_needs():
    # SQLAlchemy 2.1's asyncio engine needs greenlet, which the [db] extra of
    # google-adk 1.20.0 to 2.9.0 does not ask for (P7 failed there).
    import argparse

    for release in ("1.20.0", "2.6.1", "2.13.0"):
        _, _, requirement = envs._target(argparse.Namespace(adk=release, adk_src=None))
        assert f"google-adk[db]=={release}" in requirement and "greenlet" in requirement


def test_this_environment_runs_the_database_round_trip():
    # Every invariant the release can check runs here: P7 included.
    from compaction_harness.sdk.python.adk import Pipeline
    from compaction_harness.spec.model import Step

    pipeline = Pipeline(compaction_interval=1, overlap_size=0, storage="database")
    try:
        pipeline.append(Step("i1", "user", 1.0, text="hi"))
        assert pipeline.database_prompt() == [("user", (("text", "hi"),))]
    finally:
        pipeline.close()
