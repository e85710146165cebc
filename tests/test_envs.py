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
    previous = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGHUP)}
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
