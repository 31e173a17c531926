"""The journal's rows as the program holds them: a stored entry (``JournalEntry``) read from its columns,
an entry to append (``PendingEntry`` and what else ``append_many`` takes), an entry as the replay reads
it (``Replayed``), and the hash a stored row's columns give (what the head check compares)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from controller.journal.chain import canonical_json, stored_hash
from controller.journal.entry_view import EntryView, merged_payload, view_of
from controller.journal.errors import JournalError
from controller.journal.kinds import ENTRY_SCHEMA_VERSION, newer_entry_words
from table_names.records import FrozenRecord

if TYPE_CHECKING:
    from pathlib import Path

    # The typed entries (msgspec and ~60 classes) load when an entry is first read as its class, or
    # appended: a reader of today's rows that only folds and shows them reads their views
    # (controller/journal/entry_view.py; issue 28, docs/operations.md "The sixth stop").
    from controller.journal import entries as typed


class JournalEntry(FrozenRecord):
    """One stored entry: its envelope, its public part, and its private part where it has one.

    ``private`` is held here for trusted readers (the reducer, recovery, recall's audit JSON, the
    integrity check). Anything a viewer sees goes through controller/journal/privacy.py, which drops it
    until the round is revealed."""

    __slots__ = (
        "_typed",
        "_view",
        "hash",
        "kind",
        "prev_hash",
        "private",
        "private_digest",
        "private_text",
        "public",
        "round_id",
        "seq",
        "source",
        "stored_text",
        "table_id",
        "time_utc",
        "version",
    )
    seq: int
    time_utc: str
    table_id: str
    round_id: str | None
    source: str
    kind: str
    version: int
    public: dict[str, Any]
    private: dict[str, Any] | None
    private_text: str | None  # the stored private part, salt included: its sha256 is private_digest
    private_digest: str | None
    prev_hash: str
    hash: str
    # An entry of an earlier version (upcast to read it): its payload exactly as written, which the
    # chain hashes (``public`` is then the upcast public part, not the stored text).
    stored_text: str | None
    # The typed entry, made once when first asked (the panel folds an entry and then gates it).
    _typed: typed.Entry | None
    # Its view, made once when first asked (the fold reads it, then the gate).
    _view: EntryView | None

    def __init__(  # noqa: PLR0913, PLR0917 - a stored row's every column
        self,
        seq: int,
        time_utc: str,
        table_id: str,
        round_id: str | None,
        source: str,
        kind: str,
        version: int,
        public: dict[str, Any],
        private: dict[str, Any] | None,
        private_text: str | None,
        private_digest: str | None,
        prev_hash: str,
        hash: str,
        stored_text: str | None = None,
    ) -> None:
        object.__setattr__(self, "seq", seq)
        object.__setattr__(self, "time_utc", time_utc)
        object.__setattr__(self, "table_id", table_id)
        object.__setattr__(self, "round_id", round_id)
        object.__setattr__(self, "source", source)
        object.__setattr__(self, "kind", kind)
        object.__setattr__(self, "version", version)
        object.__setattr__(self, "public", public)
        object.__setattr__(self, "private", private)
        object.__setattr__(self, "private_text", private_text)
        object.__setattr__(self, "private_digest", private_digest)
        object.__setattr__(self, "prev_hash", prev_hash)
        object.__setattr__(self, "hash", hash)
        object.__setattr__(self, "stored_text", stored_text)
        object.__setattr__(self, "_typed", None)
        object.__setattr__(self, "_view", None)

    @property
    def payload(self) -> dict[str, Any]:
        """The public and private parts as one object, as the writer gave them: for trusted readers
        only (never shown to a viewer; see privacy.py)."""
        return merged_payload(self.kind, self.public, self.private)

    @property
    def entry(self) -> typed.Entry:
        """The entry as its class (controller/journal/entries/), both parts."""
        if self._typed is None:
            from controller.journal import entries  # noqa: PLC0415 - see the import above

            object.__setattr__(self, "_typed", entries.from_parts(self.kind, self.public, self.private))
        assert self._typed is not None
        return self._typed

    @property
    def view(self) -> typed.Entry | EntryView:
        """The entry as the reducer and the privacy gate read it: its view (controller/journal/
        entry_view.py), which reads what the typed entry would without loading the classes; the typed
        entry itself once made, or where no view reads it (an earlier version's row, the kinds read only
        as their classes, a row that does not fit its kind: the typed entry refuses it)."""
        if self._view is not None:
            return self._view
        if self._typed is None and self.stored_text is None:
            seen = view_of(self.kind, self.public, self.private)
            if seen is not None:
                object.__setattr__(self, "_view", seen)
                return seen
        return self.entry

    def public_json(self) -> dict[str, Any]:
        """The entry without its private part (the private part's digest stays: it is in the hash)."""
        return {
            "seq": self.seq,
            "time_utc": self.time_utc,
            "table_id": self.table_id,
            "round_id": self.round_id,
            "source": self.source,
            "kind": self.kind,
            "version": self.version,
            "payload": self.public,
            "private_digest": self.private_digest,
            "prev_hash": self.prev_hash,
            "hash": self.hash,
        }

    def to_json(self) -> dict[str, Any]:
        """The whole entry, private part included (and its salted text, so a reader can check it
        against its digest): for trusted readers and `journal show --private`."""
        return {**self.public_json(), "private": self.private, "private_text": self.private_text}

    def stored_row(self, public_text: str) -> tuple[Any, ...]:
        """The row the journal stores for this entry, in COLUMNS order (controller/journal/schema.py),
        ``public_text`` its public part's canonical text (what ``entry_from_row`` reads back)."""
        return (
            self.seq,
            self.time_utc,
            self.table_id,
            self.round_id,
            self.source,
            self.kind,
            self.version,
            public_text,
            self.private_text,
            self.private_digest,
            self.prev_hash,
            self.hash,
        )


class PendingEntry(NamedTuple):
    """One entry for ``Journal.append_many``: its kind and its fields (public and private mixed, put
    where the kind's type says), or the typed entry itself."""

    kind: str
    payload: Mapping[str, Any] | typed.Entry
    round_id: str | None
    source: str


class EntryLike(Protocol):
    """Anything with the four fields, e.g. the round engine's ``JournalRecord``."""

    @property
    def kind(self) -> str: ...
    @property
    def payload(self) -> Mapping[str, Any] | typed.Entry: ...
    @property
    def round_id(self) -> str | None: ...
    @property
    def source(self) -> str: ...


AppendItem = EntryLike | tuple[str, "Mapping[str, Any] | typed.Entry", str | None, str]
"""What ``append_many`` takes: a ``PendingEntry``, a (kind, fields, round_id, source) tuple, or an object
with those four (the engine's ``JournalRecord``)."""


def pending_entry(item: AppendItem) -> PendingEntry:
    if isinstance(item, tuple):
        return PendingEntry(*item)
    from controller.journal import entries as typed  # noqa: PLC0415 - an append: the classes are loaded

    entry = getattr(item, "entry", None)  # the engine's JournalRecord carries the typed entry
    if isinstance(entry, typed.Entry):
        return PendingEntry(item.kind, entry, item.round_id, item.source)
    return PendingEntry(item.kind, item.payload, item.round_id, item.source)


def entry_from_row(row: Sequence[Any], journal_path: Path | None = None) -> JournalEntry:
    """An entry from its stored columns, in this order: ``seq, time_utc, table_id, round_id, source,
    kind, version, payload_text, private_text, private_digest, prev_hash, hash`` (the journal's, and the
    floor's floor_entries with its shown private part: the floor's round page reads them so).

    A row whose parts cannot be read (a public part that is not a JSON object, a private part that is
    not one: a damaged file's) is one ``JournalError`` naming the journal (when given) and the seq, in
    the replay's words, whichever reader asked (the paged read, the last entries, one entry, a backup's
    last entry): never a ``ValueError`` traceback. A column of the wrong type (SQLite keeps any type
    in any column: a version that is text, a part that is a blob) is refused by ``_checked_columns``
    before the decode, so a ``TypeError`` the decode raises is a coding bug, not reported as damage."""
    try:
        return _entry_from_row(row)
    except JournalError as error:  # an earlier version's row its upcaster refused: already its words
        if journal_path is None:
            raise
        raise JournalError(f"journal {journal_path}: {error}") from None
    except ValueError as error:  # EntryError, json's and msgspec's DecodeError, the column checks
        raise JournalError(_at(row[0], str(error), journal_path)) from None


def _checked_columns(version: object, payload_text: object, private_text: object) -> None:
    """The columns the decode compares and parses, of the types it reads them as; else a ValueError
    naming the column (a damaged file's row), so the decode never meets a damaged row's TypeError."""
    if not isinstance(version, int):
        raise ValueError(f"its version is not an integer but {type(version).__name__}")
    if not isinstance(payload_text, str):
        raise ValueError(f"its public part is not text but {type(payload_text).__name__}")
    if private_text is not None and not isinstance(private_text, str):
        raise ValueError(f"its private part is not text but {type(private_text).__name__}")


def _entry_from_row(row: Sequence[Any]) -> JournalEntry:
    (seq, time_utc, table_id, round_id, source, kind, version, payload_text, private_text, digest) = row[:10]
    _checked_columns(version, payload_text, private_text)
    upcast: typed.Entry | None = None
    stored_text: str | None = None
    if version < ENTRY_SCHEMA_VERSION:
        # An entry of an earlier version, upcast: its parts as today's type splits them, its stored
        # text kept for the hash.
        from controller.journal import entries as typed  # noqa: PLC0415 - see the import above
        from controller.journal.upcast import typed_from_legacy  # noqa: PLC0415 - it loads the classes

        try:
            upcast = typed_from_legacy(kind, version, payload_text)
        except typed.EntryError as error:
            raise JournalError(f"entry {seq} (version {version}): {error}") from None
        public, private = typed.public_dict(upcast), typed.private_dict(upcast)
        private_text, stored_text = None, payload_text
    else:
        public = json.loads(payload_text)
        if not isinstance(public, dict):
            # Every reader goes on to read its fields (``public.get``): refused here, in one line.
            raise ValueError(f"its public part is not a JSON object but {type(public).__name__}")
        private = open_private(private_text) if private_text is not None else None
    journal_entry = JournalEntry(
        seq,
        time_utc,
        table_id,
        round_id,
        source,
        kind,
        version,
        public,
        private,
        private_text,
        digest,
        row[10],
        row[11],
        stored_text,
    )
    if upcast is not None:
        object.__setattr__(journal_entry, "_typed", upcast)
    return journal_entry


def refuse_newer(stored: JournalEntry, journal_path: Path | None = None) -> None:
    """Refuse a row written by a newer release than this one (its ``version`` above
    ``ENTRY_SCHEMA_VERSION``), as the replay does: today's tables and gate are not that release's."""
    if stored.version > ENTRY_SCHEMA_VERSION:
        raise JournalError(_at(stored.seq, newer_entry_words(stored.kind, stored.version), journal_path))


def stored_view(stored: JournalEntry, journal_path: Path | None = None) -> typed.Entry | EntryView:
    """``stored.view`` for a reader that folds stored rows through their views (recall, `journal
    show`): a newer release's row refused, and a row that fits no view and refuses its typed entry (a
    damaged file's) one ``JournalError`` naming the journal (when given) and the seq, in the replay's
    words (``JournalReader.replay``), not an ``EntryError`` traceback."""
    refuse_newer(stored, journal_path)
    try:
        return stored.view
    except ValueError as error:
        # EntryError is a ValueError; the classes are loaded by now (the typed entry refused the row).
        from controller.journal.entries import EntryError  # noqa: PLC0415 - see the import above

        if not isinstance(error, EntryError):
            raise
        raise JournalError(_at(stored.seq, str(error), journal_path)) from None


def _at(seq: int, words: str, journal_path: Path | None) -> str:
    """A row's refusal as the replay words it: ``journal PATH: entry SEQ: ...`` (no path: a reader of
    rows from elsewhere, the floor's)."""
    where = f"journal {journal_path}: " if journal_path is not None else ""
    return f"{where}entry {seq}: {words}"


def open_private(private_text: str) -> dict[str, Any]:
    """A stored private part's fields (its text is ``{"part": {...}, "salt": ...}``), as
    ``entries.open_private`` reads them, by the standard library's decoder (no classes loaded)."""
    try:
        value = json.loads(private_text)
    except ValueError:
        value = None
    if not isinstance(value, dict) or not isinstance(value.get("part"), dict):
        from controller.journal import entries as typed  # noqa: PLC0415 - the refusal's own words

        return typed.open_private(private_text)  # refuses it, as it always did
    part: dict[str, Any] = value["part"]
    return part


class Replayed(NamedTuple):
    """An entry as the replay reads it: its envelope and its typed entry, decoded straight from the
    stored texts (no intermediate dicts: the reducer's hot path)."""

    seq: int
    time_utc: str
    table_id: str
    round_id: str | None
    source: str
    kind: str
    entry: typed.Entry

    @property
    def view(self) -> typed.Entry:
        """The typed entry (a replay decodes the classes: ``JournalEntry.view``'s counterpart)."""
        return self.entry


def parse_time_utc(text: str) -> datetime:
    """A journal time (format_time_utc's text) back as an aware datetime."""
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)


def recompute_hash(entry: JournalEntry) -> str:
    """The hash the entry's stored columns give (the public part as stored, the private part by its
    digest; an entry of an earlier version by its text as written): what the head check compares with
    the stored hash."""
    text = entry.stored_text if entry.stored_text is not None else canonical_json(entry.public)
    return stored_hash(entry, text)
