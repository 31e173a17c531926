"""A small file replaced atomically and durably (the anchor, a seal, an archived segment's pointer):
written to a temporary beside it, fsynced, renamed over it, and its directory fsynced, so a crash
leaves the old file or the new one, never a part of either."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path


def fsync_directory(directory: Path) -> None:
    """Make a rename or a new name in ``directory`` durable."""
    descriptor = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def write_durably(path: Path, data: bytes) -> None:
    """Replace ``path`` by ``data``: temporary file, fsync, rename, fsync the directory (OSError when it
    cannot)."""
    temporary = path.with_name(f"{path.name}.tmp-{os.getpid()}")
    try:
        with temporary.open("wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except BaseException:
        # Every way out (an OSError, or a signal's SystemExit or KeyboardInterrupt mid-write) takes the
        # temporary with it; after the rename there is none left to take.
        with contextlib.suppress(OSError):
            temporary.unlink()
        raise
    fsync_directory(path.parent)
