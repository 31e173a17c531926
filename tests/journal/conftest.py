from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import structlog

from controller.journal import Journal
from controller.logs import configure_logging


@pytest.fixture
def journal_path(tmp_path: Path) -> Path:
    return tmp_path / "var" / "journal.sqlite"


@pytest.fixture
def journal(journal_path: Path) -> Iterator[Journal]:
    """A real journal file in a fresh directory (the directory is created by Journal.open)."""
    with Journal.open(journal_path, "T1") as opened:
        yield opened


@pytest.fixture(autouse=True)
def _structlog_defaults() -> Iterator[None]:
    """Logs to standard error, as the CLI sets them (structlog's own default is standard output, which
    would mix with the output the tests read); reset afterwards so tests do not leak into each other."""
    configure_logging()
    yield
    structlog.reset_defaults()
    structlog.contextvars.clear_contextvars()
