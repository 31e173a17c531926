"""Fixtures shared by tests/drivers and tests/sim (imported into their conftest.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.device_harness.leaks import leaks_since, snapshot


@pytest.fixture(autouse=True)
def no_leaks() -> Iterator[None]:
    """Fail any test that leaves a thread, file descriptor, socket or port open (tasks: run_async)."""
    before = snapshot()
    yield
    problems = leaks_since(before)
    if problems:
        pytest.fail("test leaked: " + "; ".join(problems), pytrace=False)
