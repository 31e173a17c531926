"""The whole suite's collection: every test must have a node id of its own; and each pytest-xdist
worker's free ports a slice of their own.

`make test` runs the suite over pytest-xdist's workers, which are handed tests by node id; two tests
with the same id collapse into one there, and the other is silently never run (schemathesis' items
without a parametrize of their own all took the test function's bare name). So a repeated id stops
the collection with the ids named, instead of a run that reports fewer tests than it has."""

from __future__ import annotations

import os
from collections import Counter

import pytest

from controller.simulation.floor.processes import PORT_SLICE_ENV


def pytest_configure(config: pytest.Config) -> None:
    """Worker gwK of N probes free ports of slice K/N only (controller/simulation/floor/processes.py):
    a port one worker probed free and closed, for a server that binds it a moment later, is never
    handed to the other worker's probe in between. Set in the worker's environment (not monkeypatch:
    it holds for the whole session) so the children the tests start (`flushtable floor demo`) keep
    to the slice too."""
    worker: dict[str, object] | None = getattr(config, "workerinput", None)
    if worker is not None:
        os.environ[PORT_SLICE_ENV] = f"{int(str(worker['workerid'])[2:])}/{worker['workercount']}"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    counts = Counter(item.nodeid for item in items)
    repeated = sorted(nodeid for nodeid, count in counts.items() if count > 1)
    if repeated:
        listed = "\n  ".join(f"{nodeid} (x{counts[nodeid]})" for nodeid in repeated)
        raise pytest.UsageError(
            "tests share a node id, and only one of each would run under pytest-xdist:\n  " + listed
        )
