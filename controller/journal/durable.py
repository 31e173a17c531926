"""A small file replaced atomically and durably (the anchor, a seal, an archived segment's pointer):
written to a temporary beside it, fsynced, renamed over it, and its directory fsynced, so a crash
leaves the old file or the new one, never a part of either; and read back as the JSON it holds."""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from controller.files import FileRefused, read_bounded_if_there


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


def read_json_if_there(
    path: Path, *, limit_bytes: int, refused: Callable[[str], Exception]
) -> dict[str, Any] | None:
    """The JSON object in the small file at ``path`` (a regular file, at most ``limit_bytes``, read
    bounded so a FIFO or a device in its place neither hangs nor floods), None only when there is no
    file. ``refused(why)`` is raised when it cannot be read (the reason), is not JSON text, or holds
    any other JSON value: ``null`` included, which is a damaged file, not an absent one (read as absent,
    a damaged anchor would invite a re-anchor over the evidence)."""
    try:
        raw = read_bounded_if_there(path, limit_bytes=limit_bytes)
    except FileRefused as error:
        raise refused(error.reason) from None
    if raw is None:
        return None
    try:
        value = json.loads(raw.decode("utf-8"))
    except ValueError:
        raise refused("not JSON (damaged?)") from None
    if not isinstance(value, dict):
        raise refused(f"a JSON object is expected, not {_json_kind(value)} (damaged?)")
    return value


def _json_kind(value: object) -> str:
    """What a JSON value is, in JSON's words (what a refusal names)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "an array"
