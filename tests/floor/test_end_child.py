"""The harness's one way to end a child (controller/simulation/floor/processes.py end_child), with real
child processes: the asked signal first, SIGKILL only for a child that outstays its grace, nothing for
a child already gone. nats-server, PostgreSQL and the floor process all stop through it."""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Iterator

import pytest

from controller.simulation.floor.processes import end_child

# Each child says "ready" once its signal handling is in place, so the signal never races the setup.
_POLITE = "import sys, time; print('ready', flush=True); time.sleep(600)"
_STUBBORN = (
    "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('ready', flush=True); "
    "time.sleep(600)"
)
_OWN_STOP = (
    "import signal, sys, time; signal.signal(signal.SIGINT, lambda *_: sys.exit(7)); "
    "print('ready', flush=True); time.sleep(600)"
)


def _child(code: str) -> subprocess.Popen[bytes]:
    process = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE)
    assert process.stdout is not None
    assert process.stdout.readline() == b"ready\n"
    return process


@pytest.fixture
def children() -> Iterator[list[subprocess.Popen[bytes]]]:
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for process in started:  # a failed assertion leaves no sleeper behind
        if process.poll() is None:
            process.kill()
            process.wait(timeout=10)
        if process.stdout is not None:
            process.stdout.close()


def test_a_child_that_goes_when_asked_is_not_killed(children: list[subprocess.Popen[bytes]]) -> None:
    process = _child(_POLITE)
    children.append(process)
    end_child(process, grace_s=60)
    assert process.returncode == -signal.SIGTERM


def test_the_asked_signal_is_the_servers_own(children: list[subprocess.Popen[bytes]]) -> None:
    # PostgreSQL stops on SIGINT (fast) or SIGQUIT (immediate): the child sees that signal, not SIGTERM.
    process = _child(_OWN_STOP)
    children.append(process)
    end_child(process, ask=signal.SIGINT, grace_s=60)
    assert process.returncode == 7


def test_a_child_that_outstays_its_grace_is_killed(children: list[subprocess.Popen[bytes]]) -> None:
    # It ignores SIGTERM, so the grace always runs out, however loaded the machine.
    process = _child(_STUBBORN)
    children.append(process)
    end_child(process, grace_s=0.2)
    assert process.returncode == -signal.SIGKILL


def test_a_child_already_gone_is_left_alone(children: list[subprocess.Popen[bytes]]) -> None:
    process = subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"])
    children.append(process)
    process.wait(timeout=60)
    end_child(process, grace_s=60)  # no signal to a reaped pid (it may be another process's by now)
    assert process.returncode == 3
