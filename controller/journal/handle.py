"""The open file of one journal segment, the record a journal's parts share (controller/journal/store.py):
its SQLite connection under one lock, and what the file is (its schema, where its segment starts).

It changes only through its own methods: ``load_base`` when opened, ``take`` when a live seal switches
the journal to the next segment's file (``Journal.switch_file``), ``close``."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from controller.journal.errors import JournalError, sqlite_reason
from controller.journal.schema import (
    FIRST_SEGMENT,
    SCHEMA_VERSION,
    TOTALS_READING_SCHEMA,
    columns_for,
    read_segment_base,
)


class JournalFile:
    """One segment's SQLite file, open. Safe to share between threads (``lock`` around ``connection``)."""

    def __init__(
        self,
        connection: sqlite3.Connection,
        path: Path,
        table_id: str,
        *,
        readonly: bool,
        version: int = SCHEMA_VERSION,
    ) -> None:
        self.connection = connection
        self.path = path
        self.table_id = table_id
        self.readonly = readonly
        self.lock = threading.Lock()
        self.base = FIRST_SEGMENT  # the segment this file is (docs/journal.md "Segments and seals")
        self._set_schema(version)

    def _set_schema(self, version: int) -> None:
        # The file's schema (docs/journal.md "Versions and upcasting"): a reader of an earlier one
        # reads its entries upcast and has no totals (it folds); a writer has migrated it.
        self.schema_version = version
        self.has_totals = version >= 3
        # A schema-3 file's totals left the progressive's net out of each round's balance: read where
        # they hold no Progressive wager, folded where they do (controller/journal/indexes.py).
        self.totals_current = version >= TOTALS_READING_SCHEMA
        self.columns = columns_for(version)

    def load_base(self) -> None:
        """Read where this file's segment starts (journal_meta)."""
        try:
            with self.lock:
                self.base = read_segment_base(self.connection)
        except sqlite3.Error as error:
            raise JournalError(f"journal {self.path}: cannot read: {sqlite_reason(error)}") from error

    def take(self, following: JournalFile) -> None:
        """Go on at ``following``'s connection (the next segment's file, opened at this same path): the
        caller holds ``lock`` and has closed this file's connection."""
        self.connection = following.connection
        self.base = following.base
        self._set_schema(following.schema_version)

    def read(self, query: str, params: Sequence[Any]) -> list[Any]:
        """Every row of one query, under the lock; a failure is a ``JournalError`` naming the file."""
        with self.lock:
            try:
                return self.connection.execute(query, params).fetchall()
            except sqlite3.Error as error:
                raise JournalError(f"journal {self.path}: cannot read: {sqlite_reason(error)}") from error

    def close(self) -> None:
        with self.lock:
            self.connection.close()
