"""The journal's anchor: a small file beside the journal (``journal.sqlite.anchor``) naming the last
entry the daemon knows to be committed, so that a journal shorter than its anchor (truncated, a lost
or damaged write-ahead log) is caught at the next start (controller/journal/proof.py).

    {"hash": "9c5c3718…", "mac": "5f1e…", "seq": 18508, "table_id": "T1",
     "time_utc": "2026-11-29T16:30:01.123456Z"}

``time_utc`` is when the anchor was written. The daemon writes it after the ``table_opened`` entry,
after every commit that holds a round's closing entry **and before anything acts on that commit** (the
round printed, the panel and the dealer told: controller/daemon_journal.py), and at shutdown; a new
journal's anchor (seq 0, the genesis hash) is written **before** the journal is created, so a crash
between the two never leaves entries without an anchor. Each write is atomic and durable: a temporary
file, fsynced, renamed over the anchor, and the directory fsynced. A crash leaves the old anchor or
the new one, never half of one.

``mac``: with an anchor key configured (``[journal] anchor_key_file``, a file kept off the journal's
disk), HMAC-SHA256 of the other four fields under that key, so that whoever can write the journal's
disk but not read the key cannot write an anchor that is accepted (recomputed over a shortened or
rewritten journal). Without a key there is no ``mac`` and the anchor proves only what a crash or a
bad disk did, not what a person with the disk did (docs/journal.md "The anchor key").

The anchor only ever lags the journal (it is written after the commit), so the rule at start is: the
anchored entry must be there, with that hash.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import re
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from controller.files import FileRefused, read_bounded
from controller.journal.chain import GENESIS_HASH, canonical_json, format_time_utc
from controller.journal.durable import read_json_if_there, write_durably
from controller.journal.store import JournalError

ANCHOR_SUFFIX = ".anchor"
_HEX = frozenset("0123456789abcdef")
_ANCHOR_MAX_BYTES = 4096  # an anchor is about 200 bytes: anything much larger is not one
ANCHOR_KEY_MIN_BYTES = 32  # e.g. `openssl rand -hex 32 > anchor.key` (64 bytes of hex text)
ANCHOR_KEY_MAX_BYTES = 4096
_MAC_CONTEXT = b"flushtable journal anchor v1\n"  # a key used elsewhere too signs nothing of ours


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
    mac: str | None = None  # HMAC-SHA256 under the anchor key (anchor_mac), or None: not keyed

    def to_json(self) -> dict[str, Any]:
        fields: dict[str, Any] = {
            "table_id": self.table_id,
            "seq": self.seq,
            "hash": self.hash,
            "time_utc": self.time_utc,
        }
        if self.mac is not None:
            fields["mac"] = self.mac
        return fields

    def text(self) -> str:
        return f"{self.seq}:{self.hash}"

    def keyed(self, key: bytes | None) -> Anchor:
        """This anchor with its ``mac`` under ``key`` (None: not keyed)."""
        return replace(self, mac=None if key is None else anchor_mac(key, self))

    @classmethod
    def of(cls, table_id: str, seq: int, hash_hex: str, *, now: datetime | None = None) -> Anchor:
        moment = now if now is not None else datetime.now(UTC)
        return cls(table_id, seq, hash_hex, format_time_utc(moment))

    @classmethod
    def genesis(cls, table_id: str) -> Anchor:
        return cls.of(table_id, 0, GENESIS_HASH)


def anchor_mac(key: bytes, anchor: Anchor) -> str:
    """HMAC-SHA256 under ``key`` of the anchor's four fields (canonical JSON), as hex."""
    signed = {
        "table_id": anchor.table_id,
        "seq": anchor.seq,
        "hash": anchor.hash,
        "time_utc": anchor.time_utc,
    }
    message = _MAC_CONTEXT + canonical_json(signed).encode("utf-8")
    return hmac.new(key, message, hashlib.sha256).hexdigest()


def key_problem(anchor: Anchor, key: bytes | None, journal_path: str | Path) -> str | None:
    """Why this anchor cannot be trusted with this key (None: it can). Keyed where a key is set, not
    keyed where none is: a key dropped from the configuration is refused too, not quietly ignored."""
    where = anchor_path(journal_path).name
    if key is None:
        if anchor.mac is not None:
            return (
                f"the anchor ({where}) is keyed, but no anchor key is configured "
                "([journal] anchor_key_file in the table's configuration)"
            )
        return None
    if anchor.mac is None:
        return (
            f"the anchor ({where}) is not keyed, but an anchor key is configured: it was written "
            "without the key (forged?)"
        )
    if not hmac.compare_digest(anchor.mac, anchor_mac(key, anchor)):
        return (
            f"the anchor ({where}) does not verify with the anchor key (forged, or written with another key?)"
        )
    return None


class AnchorError(JournalError):
    """The anchor file exists but cannot be read as an anchor."""


def read_anchor(journal_path: str | Path) -> Anchor | None:
    """The anchor beside the journal, or None when there is none."""
    path = anchor_path(journal_path)
    value = read_json_if_there(
        path,
        limit_bytes=_ANCHOR_MAX_BYTES,
        refused=lambda why: AnchorError(f"anchor {path}: not an anchor: {why}"),
    )
    if value is None:  # no file (a file of JSON null is refused above: a damaged anchor is no anchor)
        return None
    table_id, seq, hash_hex, time_utc = (value.get(key) for key in ("table_id", "seq", "hash", "time_utc"))
    mac = value.get("mac")
    if (
        not isinstance(table_id, str)
        or not table_id
        or not isinstance(seq, int)
        or isinstance(seq, bool)
        or seq < 0
        or not _is_hex(hash_hex)
        or not isinstance(time_utc, str)
        or (seq == 0 and hash_hex != GENESIS_HASH)
        or (mac is not None and not _is_hex(mac))
        or not set(value) <= {"table_id", "seq", "hash", "time_utc", "mac"}
    ):
        raise AnchorError(f"anchor {path}: not an anchor (table_id, seq, hash, time_utc expected)")
    assert isinstance(hash_hex, str)
    return Anchor(table_id, seq, hash_hex, time_utc, mac if isinstance(mac, str) else None)


def _is_hex(value: object) -> bool:
    return isinstance(value, str) and len(value) == 64 and set(value) <= _HEX


def read_anchor_key(path: str | Path) -> bytes:
    """The anchor key in the file at ``path``: its bytes, surrounding whitespace removed, at least
    ANCHOR_KEY_MIN_BYTES of them. A regular file only, read with a size limit. ``ValueError`` (one line,
    without the key) when it cannot be used."""
    key_path = Path(path)
    try:
        raw = read_bounded(key_path, limit_bytes=ANCHOR_KEY_MAX_BYTES)
    except FileRefused as refused:
        raise ValueError(str(refused)) from None
    key = raw.strip()
    if len(key) < ANCHOR_KEY_MIN_BYTES:
        raise ValueError(
            f"{key_path}: {len(key)} bytes; an anchor key has at least {ANCHOR_KEY_MIN_BYTES} "
            "(make one with `openssl rand -hex 32`)"
        )
    if len(set(key)) == 1:
        raise ValueError(f"{key_path}: every byte the same: not a real key (`openssl rand -hex 32`)")
    return key


def write_anchor(journal_path: str | Path, anchor: Anchor, *, key: bytes | None = None) -> Anchor:
    """Replace the anchor atomically and durably (temporary file, fsync, rename, fsync the directory),
    keyed with ``key`` when one is given; returns the anchor as written. A ``JournalError`` when it
    cannot be written."""
    path = anchor_path(journal_path)
    written = anchor.keyed(key)
    data = (json.dumps(written.to_json(), sort_keys=True) + "\n").encode("utf-8")
    try:
        write_durably(path, data)
    except OSError as error:
        raise JournalError(f"anchor {path}: cannot write: {error}") from error
    return written


_TEMPORARY_NAME = re.compile(r".*\.tmp-([0-9]+)")  # what write-then-rename names its temporary


def _process_gone(pid: int) -> bool:
    """No process ``pid`` runs here (a signal 0 finds none). One that runs, or that we may not signal,
    is not gone: its temporary may be a write in progress."""
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:
        return False
    return False


def remove_stale_temporaries(directory: Path, prefix: str) -> list[Path]:
    """Remove ``PREFIX.tmp-PID`` files in ``directory`` whose writer is gone: the temporaries of an
    atomic write cut short by a kill (SIGKILL, or SIGTERM before the daemon handles it), which no exit
    path of the writer could remove. A writer still running keeps its own. Returns what was removed."""
    removed: list[Path] = []
    try:
        names = os.listdir(directory)
    except OSError:
        return removed  # no directory (no seal yet) or not ours to list: nothing to clean
    for name in names:
        if not name.startswith(prefix):
            continue
        match = _TEMPORARY_NAME.fullmatch(name, len(prefix))
        if match is None or not _process_gone(int(match.group(1))):
            continue
        with contextlib.suppress(FileNotFoundError):
            (directory / name).unlink()
            removed.append(directory / name)
    return removed
