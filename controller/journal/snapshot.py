"""A read-only connection to a journal that works wherever the file can be read, a read-only file
system included, and sees the entries still in its write-ahead log.

SQLite opens a WAL-mode database read-only (``mode=ro``) only where it can open or create the
``-shm`` beside it; on a read-only file system, or in a directory the process cannot write, that
fails (``unable to open database file``). There:

- with no ``-wal`` (or an empty one) every entry is in the main file: it is opened ``immutable=1``
  (no locks, no ``-shm``);
- with a ``-wal``, the file and its ``-wal`` are copied to a private temporary directory and the copy
  is opened: SQLite rebuilds the WAL index from the ``-wal`` there, exactly as it would beside the
  journal, so the copy sees what the journal holds. Nothing writes a read-only file system, so the two
  files cannot change between the copies.

Nothing here ever writes the journal or its ``-wal``: a read-only connection never checkpoints.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
import tempfile
from collections.abc import Iterator
from pathlib import Path

from controller.journal.store import JournalError

DEFAULT_BUSY_TIMEOUT_S = 5.0


def wal_path(path: Path) -> Path:
    return path.with_name(path.name + "-wal")


def _shared_access_possible(path: Path) -> bool:
    """True where SQLite can open or create the ``-shm`` beside the journal (the normal case)."""
    directory = path.resolve().parent
    try:
        if os.statvfs(directory).f_flag & os.ST_RDONLY:
            return False
    except OSError:
        return False
    return os.access(directory, os.W_OK)


def _connect(uri: str, busy_timeout_s: float) -> sqlite3.Connection:
    return sqlite3.connect(
        uri, uri=True, timeout=busy_timeout_s, isolation_level=None, check_same_thread=False
    )


def _open(journal_path: Path, uri: str, busy_timeout_s: float) -> sqlite3.Connection:
    """``_connect``, its failure a JournalError that names the journal."""
    try:
        return _connect(uri, busy_timeout_s)
    except sqlite3.Error as error:
        raise JournalError(f"journal {journal_path}: cannot open: {error}") from error


def _cannot_open_shared(error: sqlite3.Error) -> bool:
    name = getattr(error, "sqlite_errorname", "")
    return name.startswith(("SQLITE_CANTOPEN", "SQLITE_READONLY")) or "unable to open" in str(error)


@contextlib.contextmanager
def readonly_connection(
    path: str | Path, *, busy_timeout_s: float = DEFAULT_BUSY_TIMEOUT_S
) -> Iterator[sqlite3.Connection]:
    """A read-only connection to the journal at ``path`` (see the module's docstring); the private
    copy, if one was needed, is removed afterwards."""
    journal_path = Path(path)
    if not journal_path.is_file():
        raise JournalError(f"journal {journal_path}: no such file")
    uri = journal_path.resolve().as_uri()
    if _shared_access_possible(journal_path):
        try:
            connection = _connect(f"{uri}?mode=ro", busy_timeout_s)
            connection.execute("SELECT COUNT(*) FROM sqlite_schema").fetchone()
        except sqlite3.Error as error:
            if not _cannot_open_shared(error):
                raise JournalError(f"journal {journal_path}: cannot open: {error}") from error
        else:
            with contextlib.closing(connection):
                yield connection
            return
    wal = wal_path(journal_path)
    if not wal.exists() or wal.stat().st_size == 0:
        with contextlib.closing(
            _open(journal_path, f"{uri}?mode=ro&immutable=1", busy_timeout_s)
        ) as connection:
            yield connection
        return
    try:
        scratch = tempfile.TemporaryDirectory(prefix="flushtable-journal-")
    except OSError as error:
        raise JournalError(
            f"journal {journal_path}: read-only here, and no temporary directory for a private copy: {error}"
        ) from error
    with scratch as directory:
        copy = Path(directory) / journal_path.name
        try:
            shutil.copyfile(journal_path, copy)
            shutil.copyfile(wal, wal_path(copy))
        except OSError as error:
            raise JournalError(f"journal {journal_path}: cannot copy it to read it: {error}") from error
        with contextlib.closing(
            _open(journal_path, f"{copy.resolve().as_uri()}?mode=ro", busy_timeout_s)
        ) as connection:
            yield connection
