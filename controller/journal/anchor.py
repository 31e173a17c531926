"""The journal's anchor: a small file beside the journal (``journal.sqlite.anchor``) naming the last
entry the daemon knows to be committed, so that a journal shorter than its anchor (truncated, a lost
or damaged write-ahead log) is caught at the next start (controller/journal/proof.py).

    {"table_id": "T1", "seq": 18508, "hash": "9c5c3718…", "time_utc": "2026-11-29T16:30:01.123456Z"}

``time_utc`` is when the anchor was written. The daemon writes it after the ``table_opened`` entry,
after every round's closing entry is committed, and at shutdown; a new journal's anchor (seq 0, the
genesis hash) is written **before** the journal is created, so a crash between the two never leaves
entries without an anchor. Each write is atomic and durable: a temporary file, fsynced, renamed over
the anchor, and the directory fsynced. A crash leaves the old anchor or the new one, never half of one.

The anchor only ever lags the journal (it is written after the commit), so the rule at start is: the
anchored entry must be there, with that hash.
"""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from controller.journal.chain import GENESIS_HASH, format_time_utc
from controller.journal.store import JournalError

ANCHOR_SUFFIX = ".anchor"
_HEX = frozenset("0123456789abcdef")


def anchor_path(journal_path: str | Path) -> Path:
    """Where the anchor of the journal at ``journal_path`` lives: beside it, ``NAME.anchor``."""
    path = Path(journal_path)
    return path.with_name(path.name + ANCHOR_SUFFIX)


@dataclass(frozen=True, slots=True)
class Anchor:
    table_id: str
    seq: int  # 0: the journal was created and held no entry yet
    hash: str  # the hash of entry ``seq`` (GENESIS_HASH for 0)
    time_utc: str  # when the anchor was written

    def to_json(self) -> dict[str, Any]:
        return {"table_id": self.table_id, "seq": self.seq, "hash": self.hash, "time_utc": self.time_utc}

    def text(self) -> str:
        return f"{self.seq}:{self.hash}"

    @classmethod
    def of(cls, table_id: str, seq: int, hash_hex: str, *, now: datetime | None = None) -> Anchor:
        moment = now if now is not None else datetime.now(UTC)
        return cls(table_id, seq, hash_hex, format_time_utc(moment))

    @classmethod
    def genesis(cls, table_id: str) -> Anchor:
        return cls.of(table_id, 0, GENESIS_HASH)


class AnchorError(JournalError):
    """The anchor file exists but cannot be read as an anchor."""


def read_anchor(journal_path: str | Path) -> Anchor | None:
    """The anchor beside the journal, or None when there is none."""
    path = anchor_path(journal_path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except OSError as error:
        raise AnchorError(f"anchor {path}: cannot read: {error}") from error
    try:
        value = json.loads(text)
    except ValueError:
        raise AnchorError(f"anchor {path}: not JSON (damaged?)") from None
    if not isinstance(value, dict):
        raise AnchorError(f"anchor {path}: not an anchor (a JSON object is expected)")
    table_id, seq, hash_hex, time_utc = (value.get(key) for key in ("table_id", "seq", "hash", "time_utc"))
    if (
        not isinstance(table_id, str)
        or not table_id
        or not isinstance(seq, int)
        or isinstance(seq, bool)
        or seq < 0
        or not isinstance(hash_hex, str)
        or len(hash_hex) != 64
        or not set(hash_hex) <= _HEX
        or not isinstance(time_utc, str)
        or (seq == 0 and hash_hex != GENESIS_HASH)
    ):
        raise AnchorError(f"anchor {path}: not an anchor (table_id, seq, hash, time_utc expected)")
    return Anchor(table_id, seq, hash_hex, time_utc)


def write_anchor(journal_path: str | Path, anchor: Anchor) -> None:
    """Replace the anchor atomically and durably (temporary file, fsync, rename, fsync the directory).
    A ``JournalError`` when it cannot be written."""
    path = anchor_path(journal_path)
    temporary = path.with_name(f"{path.name}.tmp-{os.getpid()}")
    data = (json.dumps(anchor.to_json(), sort_keys=True) + "\n").encode("utf-8")
    try:
        with temporary.open("wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
        directory = os.open(path.parent, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        try:
            os.fsync(directory)
        finally:
            os.close(directory)
    except OSError as error:
        with contextlib.suppress(OSError):
            temporary.unlink()
        raise JournalError(f"anchor {path}: cannot write: {error}") from error
