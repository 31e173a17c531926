"""The journal's failures in an operator's words: ``JournalError``, and SQLite's errors read with the
operating system's own reasons (a full disk, a file-size limit, a read-only directory)."""

from __future__ import annotations

import contextlib
import os
import resource
import sqlite3
from pathlib import Path

from controller.errors import UserError


class JournalError(UserError):
    """The journal cannot be opened, read or written. In the daemon: hold the table and raise a
    ``journal_error`` fault; at the command line: one line, exit 2."""


# What an operator can act on, by SQLite's error name (its prefix: SQLITE_IOERR_WRITE is an I/O error).
# SQLite reports ENOSPC and EFBIG (a file-size limit) as SQLITE_FULL, and a read-only file, directory or
# mount as SQLITE_READONLY*; the name stays in brackets for whoever reads SQLite's documentation.
_OPERATOR_REASONS: tuple[tuple[str, str], ...] = (
    ("SQLITE_FULL", "no space left: the disk (or the file-size limit) is full"),
    ("SQLITE_READONLY", "the file, its directory or its disk is read-only"),
    ("SQLITE_IOERR", "the disk reported an I/O error"),
    ("SQLITE_CORRUPT", "the file is damaged"),
    ("SQLITE_CANTOPEN", "the file cannot be opened"),
    ("SQLITE_PERM", "permission denied"),
)


_ACCESS_ERRORS = ("SQLITE_CANTOPEN", "SQLITE_READONLY", "SQLITE_PERM")


def sqlite_reason(error: sqlite3.Error, path: Path | None = None) -> str:
    """SQLite's error in an operator's words; for an error of access, with the operating system's own
    reason when ``path`` is given (SQLite says only "unable to open database file")."""
    name = getattr(error, "sqlite_errorname", None)
    if not name:
        return str(error)
    for prefix, reason in _OPERATOR_REASONS:
        if name.startswith(prefix):
            why = None
            if path is not None and name.startswith(_ACCESS_ERRORS):
                why = _os_access_reason(path)
            elif path is not None and name.startswith(_SPACE_ERRORS):
                why = _os_space_reason(path)
            return f"{why or reason} ({name})"
    return f"{error} ({name})"


_SPACE_ERRORS = ("SQLITE_FULL", "SQLITE_IOERR")
_LOW_SPACE_BYTES = 1 << 20  # less than this free, a journal commit (fsynced WAL pages) can fail


def _os_space_reason(path: Path) -> str | None:
    """A failed write's likely cause, from the operating system (SQLite keeps errno to itself, and
    reports a file-size limit as an I/O error): the disk's free space, or the process's file-size
    limit against the journal's and its WAL's sizes."""
    try:
        stats = os.statvfs(path.parent)
    except OSError:
        return None
    free_bytes = stats.f_bavail * stats.f_frsize
    if free_bytes < _LOW_SPACE_BYTES:
        return f"no space left on the disk holding {path.parent} ({free_bytes:,} bytes free)"
    soft_limit, _ = resource.getrlimit(resource.RLIMIT_FSIZE)
    if soft_limit != resource.RLIM_INFINITY:
        sizes = []
        for candidate in (path, path.with_name(path.name + "-wal")):
            with contextlib.suppress(OSError):
                sizes.append(candidate.stat().st_size)
        if sizes and max(sizes) + _LOW_SPACE_BYTES // 16 >= soft_limit:
            return f"the file-size limit of this process (ulimit -f) is reached: {soft_limit:,} bytes"
    return None


def _os_access_reason(path: Path) -> str | None:
    """Why the operating system will not let the journal at ``path`` be written, if it says: the file
    itself, or its directory (SQLite creates the -wal and -shm files beside it)."""
    try:
        descriptor = os.open(path, os.O_RDWR)
    except FileNotFoundError:
        pass
    except OSError as error:
        return f"{error.strerror or error} ({path})"
    else:
        os.close(descriptor)
    directory = path.parent
    if not directory.is_dir():
        return f"no directory {directory}"
    if not os.access(directory, os.W_OK | os.X_OK):
        try:
            # Ask the directory itself, for the system's words (EROFS, EACCES).
            descriptor = os.open(directory / f".{path.name}.probe", os.O_WRONLY | os.O_CREAT | os.O_EXCL)
        except OSError as error:
            return f"{error.strerror or error} ({directory}: the journal's -wal and -shm files go there)"
        os.close(descriptor)
        os.unlink(directory / f".{path.name}.probe")
    return None
