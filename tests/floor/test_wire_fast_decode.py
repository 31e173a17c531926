"""The floor's fast decode (msgspec) against the reference (Python's json reader and the field checks),
as properties (docs/floor.md "CPU per message"): on every body, hostile or not, ``wire.decode`` gives
what ``wire.decode_reference`` gives (the same message, or the same refusal in the same words), and the
fast path takes every body a real table's uplink sends. Pure: no server, no I/O past a temporary journal.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from controller.journal.chain import canonical_json
from controller.journal.store import Journal
from controller.simulation.floor_tables import MIXED_GAMES, SimTable
from controller.uplink import wire

# Integers past int64 and uint64, floats, any text (surrogates among it), nested: what a hostile table
# can put anywhere in a body.
HOSTILE_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**80), max_value=2**80)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)
# What the fast path may take as canonical: JSON without floats, any text but lone surrogates.
FLOATLESS_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**80), max_value=2**80)
    | st.text(st.characters(exclude_categories=["Cs"]), max_size=12),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(st.text(st.characters(exclude_categories=["Cs"]), max_size=8), children, max_size=4)
    ),
    max_leaves=16,
)


def _outcome(decode: Callable[[bytes], Any], body: bytes) -> tuple[Any, ...]:
    try:
        return ("taken", decode(body))
    except wire.BadMessage as error:
        return ("refused", str(error))
    except Exception as error:
        return ("raised", type(error).__name__, str(error))


def _same(body: bytes) -> None:
    assert _outcome(wire.decode, body) == _outcome(wire.decode_reference, body), body[:300]


@pytest.fixture(scope="module")
def real_bodies(tmp_path_factory: pytest.TempPathFactory) -> list[bytes]:
    """Every body the uplinks of three real tables (one of each game) send for a few rounds each."""
    base: Path = tmp_path_factory.mktemp("journals")
    bodies: list[bytes] = []
    for index, game in enumerate(MIXED_GAMES):
        table_id = f"W{index}"
        journal = Journal.open(base / f"{table_id}.sqlite", table_id, synchronous="OFF")
        try:
            sim = SimTable(journal, game, random.Random(index))
            for _ in range(4):
                sim.play_round()
            for stored in journal.entries():
                bodies.append(wire.entry_body(stored.public_json()))
                if stored.private_text is not None:
                    bodies.append(wire.private_body(table_id, stored.seq, stored.private_text))
        finally:
            journal.close()
    return bodies


def test_the_fast_path_takes_every_real_body_as_the_reference_does(real_bodies: list[bytes]) -> None:
    assert len(real_bodies) > 100
    for body in real_bodies:
        fast = wire._decode_fast(body)
        assert fast is not None, body[:300]  # a fast path that real tables never take saves nothing
        assert fast == wire.decode_reference(body)


# The two bodies as the uplinks write them (canonical JSON, keys sorted): a private part's opens with
# "private_text", an entry's with "hash", and only a body opening so is read by msgspec at all
# (``wire._decode_fast``). Each hostile body meant to test the fast path opens so, its twist after the
# opening key; the test checks it reached msgspec, so the corpus cannot silently stop testing it.
_PRIVATE = b'{"private_text":"x","seq":1,"table_id":"T1","type":"private","v":1}'
_HEX = b"0" * 64


def _private_with_junk(junk: bytes) -> bytes:
    """A private part's body with a field the reference ignores, "junk", holding ``junk``."""
    return b'{"private_text":"x","junk":' + junk + b',"seq":1,"table_id":"T1","type":"private","v":1}'


HOSTILE_FOR_THE_FAST_PATH = [
    _PRIVATE,
    b'{"private_text":"x","seq":1,"table_id":"T1","type":"private","v":1.0}',  # 1.0 == 1 to Python
    b'{"private_text":"x","seq":1,"table_id":"T1","type":"private","v":true}',
    b'{"private_text":"x","seq":1,"table_id":"T1","type":"private","v":2}',
    b'{"private_text":"x","seq":1,"table_id":"T1","type":"private","v":"1"}',
    b'{"private_text":"x","seq":true,"table_id":"T1","type":"private","v":1}',
    b'{"private_text":"x","seq":1.0,"table_id":"T1","type":"private","v":1}',
    b'{"private_text":"x","seq":99999999999999999999999,"table_id":"T1","type":"private","v":1}',
    b'{"private_text":"x","seq":4611686018427387904,"table_id":"T1","type":"private","v":1}',  # 2**62
    b'{"private_text":"x","seq":4611686018427387903,"table_id":"T1","type":"private","v":1}',
    b'{"private_text":"x","seq":0,"table_id":"T1","type":"private","v":1}',
    b'{"private_text":"x","seq":-1,"table_id":"T1","type":"private","v":1}',
    b'{"private_text":"x","seq":1,"table_id":"T1","type":"private","type":"entry","v":1}',
    b'{"private_text":"x","seq":1,"table_id":"T1","type":"entry","type":"private","v":1}',
    b'{"private_text":"x","seq":0,"seq":1,"table_id":"T1","type":"private","v":1}',
    b'{"private_text":"x","seq":1,"seq":0,"table_id":"T1","type":"private","v":1}',
    b'{"private_text":"x","seq":1,"table_id":"T1","table_id":"T2","type":"private","v":1}',
    b'{"private_text":"x","seq":1,"table_id":"T1","type":"private","v":1,"v":2}',
    b'{"private_text":"x","private_text":"y","seq":1,"table_id":"T1","type":"private","v":1}',
    b'{"private_text":"x","seq":1,"table_id":null,"type":"private","v":1}',
    b'{"private_text":7,"seq":1,"table_id":"T1","type":"private","v":1}',
    b'{"private_text":"x","seq":1,"table_id":"T1","v":1}',
    b'{"private_text":"x","seq":1,"table_id":"T1","type":"entry","v":1}',
    _private_with_junk(b"NaN"),
    _private_with_junk(b"Infinity"),
    _private_with_junk(b"1e400"),
    # Nested as deep as the fast path's bound lets a body through to msgspec.
    _private_with_junk(b"[" * 250 + b"]" * 250),
    _private_with_junk(b"[" * 200 + b"]" * 199),
    b'{"private_text": "x", "seq": 1, "table_id": "T1", "type": "private", "v": 1}',
    _PRIVATE + b" ",
    _PRIVATE + b"\n",
    _PRIVATE + b"x",
    _PRIVATE + b"{}",
    _PRIVATE[:-1],
    b'{"private_text":"x","seq":1,"table_id":"T1","type":"private","v":1,}',
    b'{"private_text":"\xc3\xa9\xf0\x9f\x98\x80","seq":1,"table_id":"T1","type":"private","v":1}',
    # An entry's opening on a private part's fields (the reference takes it as one), and on too little.
    b'{"hash":"' + _HEX + b'","private_text":"x","seq":1,"table_id":"T1","type":"private","v":1}',
    b'{"hash":"' + _HEX + b'","type":"entry","v":1}',
    b'{"hash":"' + _HEX + b'","hash":7,"type":"entry","v":1.0}',
]
# Bodies the fast path leaves to the reference before msgspec reads them: another opening (a body
# spelt otherwise, not an object, a byte-order mark), a \\u escape, bytes that are no strict UTF-8,
# nesting past the bound.
HOSTILE_FOR_THE_REFERENCE = [
    b"",
    b"[]",
    b"null",
    b"\xef\xbb\xbf" + _PRIVATE,  # a byte-order mark
    b'{"type":"entry","v":1}',
    b'{"type":"private","v":1,"table_id":"T1","seq":1,"private_text":"x"}',  # taken, by the reference
    b'{"type":"private","v":1.0,"table_id":"T1","seq":1,"private_text":"x"}',
    b" " + _PRIVATE,
    b'{"private_text":"x","seq":1,"t\\u0061ble_id":"T2","table_id":"T1","type":"private","v":1}',
    b'{"private_text":"\\ud800","seq":1,"table_id":"T1","type":"private","v":1}',
    b'{"private_text":"\\ud83d\\ude00","seq":1,"table_id":"T1","type":"private","v":1}',
    b'{"private_text":"\xed\xa0\x80","seq":1,"table_id":"T1","type":"private","v":1}',  # encoded surrogate
    _private_with_junk(b'"\xff"'),
    _private_with_junk(b"[" * 3000 + b"]" * 3000),
    _private_with_junk(b"[" * 300 + b"]" * 300),
    b'{"private_text":"a\\u0000b","seq":1,"table_id":"T1","type":"private","v":1}',
    b'{"private_text":"x","seq":1,"table_id":"T1\x00","type":"private","v":1}',
]


class _CountingDecoder:
    """A msgspec decoder of ``wire``'s, each body it is given kept (the fast path's one way to msgspec)."""

    def __init__(self, decoder: msgspec.json.Decoder[Any], bodies: list[bytes]) -> None:
        self._decoder = decoder
        self._bodies = bodies

    def decode(self, data: bytes) -> Any:
        self._bodies.append(bytes(data))
        return self._decoder.decode(data)


@contextmanager
def _msgspec_reads() -> Iterator[list[bytes]]:
    """The bodies the fast path hands msgspec's envelope decoders while in the block."""
    bodies: list[bytes] = []
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(wire, "_ENTRY_DECODER", _CountingDecoder(wire._ENTRY_DECODER, bodies))
        patch.setattr(wire, "_PRIVATE_DECODER", _CountingDecoder(wire._PRIVATE_DECODER, bodies))
        yield bodies


def _meant_for_the_fast_path(body: bytes) -> bool:
    """Whether msgspec is to read ``body``: it opens as an uplink's body does, holds no \\u escape and no
    NUL, is strict UTF-8 and nested no deeper than the fast path's bound (what it leaves to the
    reference, docs/floor.md "CPU per message")."""
    if not body.startswith((b'{"hash":', b'{"private_text":')) or b"\\u" in body or 0 in body:
        return False
    try:
        body.decode("utf-8")
    except UnicodeDecodeError:
        return False
    bound = wire._FAST_MAX_BRACKETS
    return len(body) <= 2 * bound or body.count(b"[") + body.count(b"{") <= bound


def _same_and_read_by_msgspec_if_meant(body: bytes) -> bool:
    """``_same``, and msgspec read the body iff it was meant to (so the fast path was tested on it):
    whether it did."""
    with _msgspec_reads() as read:
        _same(body)
    assert (body in read) == _meant_for_the_fast_path(body), body[:300]
    return body in read


def _mutations_of_a_real_entry(real: dict[str, Any]) -> list[bytes]:
    def body(**changes: Any) -> bytes:
        return wire.entry_body({**real, **changes})

    payload = real["payload"]
    first_key = sorted(payload)[0] if payload else "x"
    payload_text = canonical_json(payload)
    return [
        body(),
        body(seq=2**70),
        body(seq=-1),
        body(version=2**40),
        body(time_utc="2026-02-30T10:00:00.000000Z"),
        body(time_utc=real["time_utc"] + "\n"),
        body(hash="A" * 64),
        body(hash=real["hash"] + "\n"),
        body(private_digest="0" * 63),
        body(round_id=7),
        body(round_id="r" * 300),
        body(source=None),
        body(kind="no_such_kind"),
        body(payload=[payload]),
        body(payload={**payload, "extra_field": 1}),
        body(payload={**payload, first_key: 2**70}),
        body(payload={**payload, first_key: 1.5}),
        body(payload={**payload, first_key: 1e16}),
        body(
            payload={**payload, first_key: "\x01"}
        ),  # a control character: the one escape canonical text has
        body(payload={**payload, first_key: "\u2028\x7f\u00e9\U0001f600"}),
        body(extra_envelope_field={"any": [1, 2.5, None]}),
        # The payload not in canonical form: spaces, keys out of order, a duplicate key, needless escapes.
        wire.entry_body(real).replace(payload_text.encode(), json.dumps(payload).encode()),
        wire.entry_body(real).replace(payload_text.encode(), json.dumps(payload, ensure_ascii=True).encode()),
        wire.entry_body(real).replace(
            payload_text.encode(), b"{" + f'"{first_key}":0,'.encode() + payload_text.encode()[1:]
        ),
        wire.entry_body(real).replace(payload_text.encode(), payload_text.replace("/", "\\/").encode()),
        wire.entry_body(real).replace(b'"seq":', b'"seq":0,"seq":', 1),
        wire.entry_body(real).replace(b'"hash":', b'"hash":"x","hash":', 1),
        b"\xef\xbb\xbf" + wire.entry_body(real),
        wire.entry_body(real).replace(b'"kind":', b'"kind" : ', 1),
    ]


def test_hostile_bodies_get_the_reference_s_answer(real_bodies: list[bytes]) -> None:
    for body in HOSTILE_FOR_THE_FAST_PATH:
        with _msgspec_reads() as read:
            _same(body)
        assert read == [body], body[:300]  # the fast path's checks, not only the reference's, were tested
    for body in HOSTILE_FOR_THE_REFERENCE:
        with _msgspec_reads() as read:
            _same(body)
        assert read == [], body[:300]
    entries = [json.loads(b) for b in real_bodies if b'"type":"entry"' in b]
    for real in entries[:: max(1, len(entries) // 40)]:
        for body in _mutations_of_a_real_entry(real):
            _same_and_read_by_msgspec_if_meant(body)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_change_to_a_real_body_gets_the_reference_s_answer(
    real_bodies: list[bytes], data: st.DataObject
) -> None:
    """A real body with a place anywhere in it (a payload's leaf, an envelope field, the whole payload)
    replaced by hostile JSON, or unchanged, written out in any of the spellings a reader meets (the
    reference takes a real body however it is spelt; msgspec reads only a body opening with the key
    the uplink writes first, and the fast path takes only canonical text); or its bytes cut, spliced or
    doubled anywhere; or one of its keys given twice. Each body meant for the fast path is checked to
    have reached msgspec (``--hypothesis-show-statistics`` counts them)."""
    body = real_bodies[data.draw(st.integers(0, len(real_bodies) - 1))]
    document = json.loads(body)
    how = data.draw(st.sampled_from(["value", "value", "respell", "bytes", "duplicate"]))
    if how in {"value", "respell"}:
        paths: list[tuple[Any, ...]] = [()]
        stack: list[tuple[Any, tuple[Any, ...]]] = [(document, ())]
        while stack:
            node, path = stack.pop()
            children = (
                node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else []
            )
            for key, child in children:
                paths.append((*path, key))
                stack.append((child, (*path, key)))
        path = paths[data.draw(st.integers(0, len(paths) - 1))]
        replacement = data.draw(HOSTILE_VALUES)
        if how == "respell":  # the same document, only written otherwise
            pass
        elif path:
            parent = document
            for key in path[:-1]:
                parent = parent[key]
            parent[path[-1]] = replacement
        else:
            document = replacement
        spelling = data.draw(st.sampled_from(["canonical", "ascii", "spaced", "unsorted"]))
        if spelling == "canonical":
            try:
                mutated = canonical_json(document).encode("utf-8", "surrogatepass")
            except ValueError:
                mutated = json.dumps(document).encode()
        else:
            if spelling == "unsorted" and isinstance(document, dict) and document:
                # The key the uplink writes first kept first (the fast path reads only a body opening
                # with it), the others in any order.
                first, *others = sorted(document)
                others = data.draw(st.permutations(others))
                document = {name: document[name] for name in [first, *others]}
            mutated = json.dumps(
                document,
                ensure_ascii=spelling == "ascii",
                separators=(", ", ": ") if spelling == "spaced" else (",", ":"),
                sort_keys=spelling != "unsorted",
            ).encode("utf-8", "surrogatepass")
    elif how == "bytes":
        start = data.draw(st.integers(0, len(body)))
        end = data.draw(st.integers(start, min(len(body), start + 8)))
        mutated = body[:start] + data.draw(st.binary(max_size=6)) + body[end:]
    else:
        keys = [key for key in document if key != "payload"] + [
            f"payload.{k}" for k in document.get("payload", {})
        ]
        key = keys[data.draw(st.integers(0, len(keys) - 1))]
        value = json.dumps(data.draw(HOSTILE_VALUES), ensure_ascii=False).encode("utf-8", "surrogatepass")
        name = key.removeprefix("payload.").encode()
        if key.startswith("payload."):
            at = body.index(b'"payload":{') + len(b'"payload":{')
            mutated = body[:at] + b'"' + name + b'":' + value + b"," + body[at:]
        else:
            # After the opening key's value (the body keeps the opening the fast path reads, and the key
            # given twice is read by msgspec, first or second) or last.
            if data.draw(st.booleans()):
                text = body.decode("utf-8")
                _, opening_value_end = json.JSONDecoder().raw_decode(text, text.index(":") + 1)
                at = len(text[:opening_value_end].encode("utf-8"))
            else:
                at = len(body) - 1
            mutated = body[:at] + b',"' + name + b'":' + value + body[at:]
    read = _same_and_read_by_msgspec_if_meant(mutated)
    event(f"{how}: {'read by msgspec' if read else 'left to the reference'}")


@settings(max_examples=400, deadline=None)
@given(value=FLOATLESS_VALUES)
def test_msgspec_sorted_encoding_is_the_canonical_text_without_floats(value: Any) -> None:
    """What the fast path's canonical check rests on: for JSON without floats msgspec's sorted encoding
    is canonical_json's, byte for byte, and both readers read it back alike."""
    text = canonical_json(value).encode()
    assert msgspec.json.encode(value, order="sorted") == text
    assert msgspec.json.decode(text) == json.loads(text)


@st.composite
def _near_digest(draw: st.DrawFn) -> str:
    """Text near a sha256 hex digest: lower-case hex digits, 62 to 66 of them (the lengths around 64,
    and ones that sum to a whole number of digests when two or three are run together), now and then
    with one character put in: an upper-case digit, a space, a line break, a non-ASCII digit, a letter
    past f."""
    text = draw(st.text(alphabet="0123456789abcdef", min_size=62, max_size=66))
    if draw(st.booleans()):
        at = draw(st.integers(0, len(text)))
        text = text[:at] + draw(st.sampled_from(["A", "F", " ", "\n", "\u0663", "g"])) + text[at + 1 :]
    return text


NEAR_DIGESTS = _near_digest()


@settings(max_examples=500, deadline=None)
@given(prev_hash=NEAR_DIGESTS, hash_hex=NEAR_DIGESTS, digest=st.none() | NEAR_DIGESTS)
def test_the_fast_paths_digest_check_is_the_references_pattern(
    prev_hash: str, hash_hex: str, digest: str | None
) -> None:
    """The fast path checks the three digests of an entry at once (docs/floor.md "The eighth stop"): it
    says yes only where the reference's pattern matches each one (a final line break included: both
    refuse it, the next test)."""
    each = [prev_hash, hash_hex] + ([] if digest is None else [digest])
    exact = all(len(text) == 64 and wire._HASH.match(text) for text in each)
    assert wire._are_sha256_hex(prev_hash, hash_hex, digest) == exact, each


def test_a_digest_or_time_with_a_final_line_break_is_refused_by_both_paths(real_bodies: list[bytes]) -> None:
    """``$`` also matches before a final line break: the reference's patterns, used with ``match``,
    took ``"<64 hex digits>\\n"`` as a digest and a time ending in one as a time (the fast path, whose
    patterns match the whole text, left such a body to the reference, which took it). Each is refused
    now, by the reference in its words, and the fast path does not take it either."""
    real = next(
        json.loads(body)
        for body in real_bodies
        if b'"type":"entry"' in body and b'"private_digest":null' not in body
    )
    changed = {
        "hash": "hash is not a sha256 hex digest",
        "prev_hash": "prev_hash is not a sha256 hex digest",
        "private_digest": "private_digest is not a sha256 hex digest",
        "time_utc": "is not YYYY-MM-DDTHH:MM:SS.ffffffZ",
    }
    for name, words in changed.items():
        body = wire.entry_body({**real, name: real[name] + "\n"})
        with pytest.raises(wire.BadMessage, match=words):
            wire.decode_reference(body)
        assert wire._decode_fast(body) is None, name
        with pytest.raises(wire.BadMessage, match=words):
            wire.decode(body)
    wire.decode(wire.entry_body(real))  # the entry itself is taken
