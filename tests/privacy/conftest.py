"""The leak test's fixtures: one panel user file (scrypt hashes are slow: made once a session)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.privacy.table_run import make_users_file


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "privacy_leak: the viewer's leak test (run alone: pytest tests/privacy or -m privacy_leak)"
    )


@pytest.fixture(scope="session")
def users_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_users_file(tmp_path_factory.mktemp("privacy-users"))
