"""The whole suite's collection: every test must have a node id of its own.

`make test` runs the suite over pytest-xdist's workers, which are handed tests by node id; two tests
with the same id collapse into one there, and the other is silently never run (schemathesis' items
without a parametrize of their own all took the test function's bare name). So a repeated id stops
the collection with the ids named, instead of a run that reports fewer tests than it has."""

from __future__ import annotations

from collections import Counter

import pytest


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    counts = Counter(item.nodeid for item in items)
    repeated = sorted(nodeid for nodeid, count in counts.items() if count > 1)
    if repeated:
        listed = "\n  ".join(f"{nodeid} (x{counts[nodeid]})" for nodeid in repeated)
        raise pytest.UsageError(
            "tests share a node id, and only one of each would run under pytest-xdist:\n  " + listed
        )
