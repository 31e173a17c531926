"""The journal's hash chain: canonical JSON and each entry's sha256 (docs/journal.md "The hash chain").

Pure functions, no I/O: the store writes what these compute and `verify` recomputes it.
"""

from __future__ import annotations

import json
import json.encoder
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any, Protocol, TypedDict, Unpack


def sha256_hex(text: str) -> str:
    """sha256 of ``text`` (UTF-8), in lower-case hex: an entry's hash, a private part's commitment."""
    return (_sha256 or _load_sha256())(text.encode("utf-8")).hexdigest()


class _Digest(Protocol):
    """What a hashlib hash object gives."""

    def hexdigest(self) -> str: ...


# hashlib's sha256, bound at the first hash, not imported at this module's: hashlib loads OpenSSL (~2
# ms), which a reader that only folds and prints the journal (`flushtable recall`) never needs (issue
# 28). Not imported in each call either: an ``import`` statement of a loaded module was 0.27 us of the
# 0.75 a hash cost, the floor's take hashing every entry and private part (docs/floor.md "Eleventh
# stop").
_sha256: Callable[[bytes], _Digest] | None = None


def _load_sha256() -> Callable[[bytes], _Digest]:
    global _sha256  # noqa: PLW0603 - bound once, at the first hash
    import hashlib  # noqa: PLC0415 - see _sha256

    _sha256 = hashlib.sha256
    return _sha256


GENESIS_HASH = "0" * 64
"""The first entry's prev_hash."""


# One encoder for every call: json.dumps with these options builds a new JSONEncoder each time, which
# was a third of the journal's append cost.
_CANONICAL_ENCODER = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
)
# The C encoder that ``_CANONICAL_ENCODER.encode`` builds anew on every call (its one-shot path), built
# once with the same options: the same code makes the same bytes (issue 28: an entry's public part is
# encoded ~100 times a round). No circular-reference check (a value from msgspec or json never holds
# one: it would end in RecursionError instead of ValueError). None where the interpreter has no C
# accelerator: then ``canonical_json`` uses the encoder's own ``encode``.
_C_CANONICAL = (
    json.encoder.c_make_encoder(  # type: ignore[attr-defined]
        None,
        _CANONICAL_ENCODER.default,
        json.encoder.encode_basestring,
        None,
        ":",
        ",",
        True,  # sort_keys
        False,  # skipkeys
        False,  # allow_nan
    )
    if json.encoder.c_make_encoder is not None  # type: ignore[attr-defined]
    else None
)


def canonical_json(value: object) -> str:
    """The one text of a JSON value that the chain hashes: sorted keys, no spaces, UTF-8 as is.

    NaN and infinities are refused: they are not JSON, and money never needs them."""
    if _C_CANONICAL is None or isinstance(value, str):
        return _CANONICAL_ENCODER.encode(value)
    return "".join(_C_CANONICAL(value, 0))


# The canonical text of a string alone: what ``_CANONICAL_ENCODER.encode`` returns for one (its
# ``encode`` hands a string straight to this function, C where the interpreter has it). No cache: a
# private part's digest and a round id are new strings, and a call is cheaper than a cache's lookup.
_canonical_text: Callable[[str], str] = json.encoder.encode_basestring


def _canonical_optional(value: str | None) -> str:
    return "null" if value is None else _canonical_text(value)


def format_time_utc(moment: datetime) -> str:
    """ISO 8601 with microseconds and a Z, e.g. 2026-11-29T16:30:01.123456Z."""
    if moment.tzinfo is None:
        raise ValueError("journal times must be timezone-aware (UTC)")
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _columns_text(round_id: str | None, seq: int, source: str, table_id: str, time_utc: str) -> str:
    """The hashed columns both formulas share, as canonical text in their sorted place (after kind,
    payload and, in version 2, private_digest): one definition, so the two formulas cannot drift."""
    return (
        ',"round_id":'
        + _canonical_optional(round_id)
        + ',"seq":'
        + str(int(seq))
        + ',"source":'
        + _canonical_text(source)
        + ',"table_id":'
        + _canonical_text(table_id)
        + ',"time_utc":'
        + _canonical_text(time_utc)
    )


def _v2_hash(  # noqa: PLR0917 - positional on purpose: the append path's hot spot, called from this module only
    prev_hash: str, kind: str, payload_text: str, private_digest: str | None, columns_text: str, version: int
) -> str:
    body = (
        '{"kind":'
        + _canonical_text(kind)
        + ',"payload":'
        + payload_text
        + ',"private_digest":'
        + _canonical_optional(private_digest)
        + columns_text
        + ',"version":'
        + str(int(version))
        + "}"
    )
    return sha256_hex(prev_hash + body)


def _v1_hash(prev_hash: str, kind: str, payload_text: str, columns_text: str) -> str:
    body = '{"kind":' + _canonical_text(kind) + ',"payload":' + payload_text + columns_text + "}"
    return sha256_hex(prev_hash + body)


def entry_hash_from_text(  # noqa: PLR0913 - keyword-only: the hashed fields of an entry, all of them
    *,
    prev_hash: str,
    seq: int,
    time_utc: str,
    table_id: str,
    round_id: str | None,
    source: str,
    kind: str,
    version: int,
    payload_text: str,
    private_digest: str | None,
) -> str:
    """The hash of an entry of the typed journal (schema 2):

        sha256(prev_hash_hex + canonical_json({kind, payload, private_digest, round_id, seq, source,
                                               table_id, time_utc, version}))

    where ``payload`` is the public part (an object) and ``private_digest`` the commitment to the
    private part (or null). A reader holding only public parts and digests verifies every link. The
    envelope is spliced around the payload's canonical text (the append path's hot spot); the result is
    the same bytes as canonical JSON of the whole object."""
    return _v2_hash(
        prev_hash,
        kind,
        payload_text,
        private_digest,
        _columns_text(round_id, seq, source, table_id, time_utc),
        version,
    )


def batch_hasher(
    *, time_utc: str, table_id: str, version: int
) -> Callable[[str, int, str | None, str, str, str, str | None], str]:
    """``entry_hash_from_text`` for the entries of one commit, which share their time, table and
    version: those columns' canonical text is made once, and each entry's hash is one string and one
    sha256 (the append path's hot spot: ~100 entries a round). The function takes ``prev_hash, seq,
    round_id, source, kind, payload_text, private_digest`` and gives the same hash, byte for byte
    (tests/journal/test_append_cost.py's test_batch_hasher_is_the_documented_formula holds it to the
    canonical JSON of the whole object)."""
    import hashlib  # noqa: PLC0415 - OpenSSL's load only for a writer (see _sha256)

    sha256 = hashlib.sha256
    tail = (
        ',"table_id":'
        + _canonical_text(table_id)
        + ',"time_utc":'
        + _canonical_text(time_utc)
        + ',"version":'
        + str(int(version))
        + "}"
    )

    def entry_hash(  # noqa: PLR0913, PLR0917 - positional on purpose: called once per entry, in order
        prev_hash: str,
        seq: int,
        round_id: str | None,
        source: str,
        kind: str,
        payload_text: str,
        private_digest: str | None,
    ) -> str:
        # The keys in their sorted order: kind, payload, private_digest, round_id, seq, source, then
        # the batch's table_id, time_utc and version.
        text = (
            f'{prev_hash}{{"kind":{_canonical_text(kind)},"payload":{payload_text},'
            f'"private_digest":{"null" if private_digest is None else _canonical_text(private_digest)},'
            f'"round_id":{"null" if round_id is None else _canonical_text(round_id)},'
            f'"seq":{int(seq)},"source":{_canonical_text(source)}{tail}'
        )
        return sha256(text.encode("utf-8")).hexdigest()

    return entry_hash


class HashedColumns(TypedDict):
    """An entry's hashed columns other than its public part (``entry_hash_from_text``'s keywords)."""

    prev_hash: str
    seq: int
    time_utc: str
    table_id: str
    round_id: str | None
    source: str
    kind: str
    version: int
    private_digest: str | None


def entry_hash(*, payload: Mapping[str, Any], **columns: Unpack[HashedColumns]) -> str:
    """``entry_hash_from_text`` for a public part given as an object."""
    return entry_hash_from_text(payload_text=canonical_json(payload), **columns)


class Placed(Protocol):
    """Where a stored entry stands: its number in the table's journal, when, at which table, in which
    round, from which source (every stored form has these: a row, a JournalEntry, a replayed entry)."""

    @property
    def seq(self) -> int: ...
    @property
    def time_utc(self) -> str: ...
    @property
    def table_id(self) -> str: ...
    @property
    def round_id(self) -> str | None: ...
    @property
    def source(self) -> str: ...


class Envelope(Placed, Protocol):
    """An entry's stored columns other than its public part (a stored row, a JournalEntry)."""

    @property
    def prev_hash(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def version(self) -> int: ...
    @property
    def private_digest(self) -> str | None: ...


def entry_hash_v1_from_text(  # noqa: PLR0913 - keyword-only: the hashed fields of a version-1 entry, all of them
    *,
    prev_hash: str,
    seq: int,
    time_utc: str,
    table_id: str,
    round_id: str | None,
    source: str,
    kind: str,
    payload_text: str,
) -> str:
    """The hash of an entry of the untyped journal (schema 1, releases up to 654a859): the entry's
    columns and its whole payload (no version, no private part), as that release wrote it:

        sha256(prev_hash_hex + canonical_json({kind, payload, round_id, seq, source, table_id, time_utc}))

    Kept so a journal of that release verifies as written (docs/journal.md "Versions and upcasting")."""
    return _v1_hash(prev_hash, kind, payload_text, _columns_text(round_id, seq, source, table_id, time_utc))


def stored_hash(envelope: Envelope, payload_text: str) -> str:
    """The hash a stored entry's columns give, its public part as canonical text: what ``verify`` and
    the store's head check compare with the stored hash. An entry is hashed by the formula of the
    version it was written at: upcasting it to read it never changes what verifies."""
    if envelope.version == 1:
        if envelope.private_digest is not None:
            # Version 1 had no private part: a digest on such an entry was not written by its release.
            return "version 1 entry with a private digest"
        return _v1_hash(envelope.prev_hash, envelope.kind, payload_text, _envelope_columns(envelope))
    return envelope_hash(envelope, payload_text)


def envelope_hash(envelope: Envelope, payload_text: str) -> str:
    """The version-2 hash of an entry given as its columns (an entry the floor receives): the formula
    ``entry_hash_from_text`` computes, whatever version the entry says. Written out in one expression
    (``_v2_hash`` around ``_columns_text``, the same text): the floor computes it for every entry it
    takes, and the six calls the two make were a third of its cost (tests/journal/test_chain.py
    holds it to ``entry_hash_from_text``)."""
    text = _canonical_text
    digest = "null" if envelope.private_digest is None else text(envelope.private_digest)
    round_id = "null" if envelope.round_id is None else text(envelope.round_id)
    return sha256_hex(
        f'{envelope.prev_hash}{{"kind":{text(envelope.kind)},"payload":{payload_text}'
        f',"private_digest":{digest},"round_id":{round_id},"seq":{int(envelope.seq)}'
        f',"source":{text(envelope.source)},"table_id":{text(envelope.table_id)}'
        f',"time_utc":{text(envelope.time_utc)},"version":{int(envelope.version)}}}'
    )


def _envelope_columns(envelope: Envelope) -> str:
    return _columns_text(
        envelope.round_id, envelope.seq, envelope.source, envelope.table_id, envelope.time_utc
    )
