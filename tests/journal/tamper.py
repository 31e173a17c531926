"""Editing a journal the way an attacker with file access would: a raw sqlite3 connection that first
drops the append-only triggers."""

from __future__ import annotations

import sqlite3
from pathlib import Path

TRIGGERS = ("journal_no_update", "journal_no_delete", "journal_extends_chain")


def tamper(path: Path, *statements: tuple[str, tuple[object, ...]]) -> None:
    connection = sqlite3.connect(path, isolation_level=None)
    try:
        for trigger in TRIGGERS:
            connection.execute(f"DROP TRIGGER IF EXISTS {trigger}")
        for sql, params in statements:
            connection.execute(sql, params)
    finally:
        connection.close()
