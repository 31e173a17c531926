"""Hypothesis strategies for every message, derived from each class's field codecs."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from firmware_protocol.constants import MAX_WINDOW, NONCE_LEN, STREAM_ID_LEN
from firmware_protocol.field_codecs import (
    Bool,
    CardList,
    Choice,
    Codec,
    FixedBytes,
    OptionalSeat,
    Position,
    SInt64,
    Text,
    UInt,
)
from firmware_protocol.messages import (
    ALL_MESSAGE_CLASSES,
    AuthConfirmV2,
    DealerKey,
    DealRequest,
    HelloV2,
    Message,
    ShuffleDone,
    SpotState,
    Status,
    StatusReport,
)
from firmware_protocol.vocabulary import (
    DEAL_PROGRESS,
    DEALER_KEYS,
    DEVICE_KINDS,
    DEVICE_STATES,
    LAMP_COLOURS,
    SEAT_KEYS,
    VALID_POSITIONS,
)

_POSITIONS = sorted(VALID_POSITIONS)


def _text(max_bytes: int) -> st.SearchStrategy[str]:
    return st.text(st.characters(blacklist_categories=("Cc", "Cs")), max_size=max_bytes).filter(
        lambda text: len(text.encode("utf-8")) <= max_bytes
    )


def codec_values(codec: Codec) -> st.SearchStrategy[Any]:
    if isinstance(codec, UInt):
        # Zero and the bounds are where codecs break; make sure they come up.
        return st.one_of(st.sampled_from(sorted({codec.low, codec.high})), st.integers(codec.low, codec.high))
    if isinstance(codec, SInt64):
        return st.integers(-(2**63), 2**63 - 1)
    if isinstance(codec, Position):
        values = st.sampled_from(_POSITIONS)
        return st.one_of(st.none(), values) if codec.optional else values
    if isinstance(codec, OptionalSeat):
        return st.one_of(st.none(), st.integers(1, 7))
    if isinstance(codec, Bool):
        return st.booleans()
    if isinstance(codec, FixedBytes):
        return st.binary(min_size=codec.length, max_size=codec.length)
    if isinstance(codec, Text):
        return _text(codec.max_bytes)
    if isinstance(codec, Choice):
        return st.sampled_from(codec.names)
    if isinstance(codec, CardList):
        return st.sets(st.integers(0, 51), max_size=52).map(lambda cards: tuple(sorted(cards)))
    raise NotImplementedError(f"no strategy for {codec!r}")


@st.composite
def _deal_request(draw: st.DrawFn) -> DealRequest:
    positions = draw(st.lists(st.sampled_from(_POSITIONS), min_size=1, max_size=len(_POSITIONS), unique=True))
    most = 52 // len(positions)
    counts = [draw(st.integers(1, most)) for _ in positions]
    return DealRequest(positions=tuple(zip(positions, counts, strict=True)))


@st.composite
def _shuffle_done(draw: st.DrawFn) -> ShuffleDone:
    missing = draw(st.sets(st.integers(0, 51), max_size=52))
    extra = draw(st.sets(st.integers(0, 51).filter(lambda card: card not in missing), max_size=10))
    return ShuffleDone(
        card_count=draw(st.integers(0, 255)),
        missing_cards=tuple(sorted(missing)),
        extra_cards=tuple(sorted(extra)),
    )


@st.composite
def _status(draw: st.DrawFn) -> Status:
    state = draw(st.sampled_from(DEVICE_STATES))
    fault_code = draw(st.integers(1, 0xFFFF)) if state == "fault" else 0
    return Status(state=state, fault_code=fault_code, lamp=draw(st.sampled_from(LAMP_COLOURS)))


@st.composite
def _spot_state(draw: st.DrawFn) -> SpotState:
    empty = draw(st.booleans())
    return SpotState(
        seat=draw(st.integers(1, 7)),
        spot=draw(st.integers(0, 7)),
        amount_cents=0 if empty else draw(st.integers(1, 0xFFFF_FFFF)),
        chip_count=0 if empty else draw(st.integers(1, 0xFFFF)),
        locked=draw(st.booleans()),
    )


@st.composite
def _dealer_key(draw: st.DrawFn) -> DealerKey:
    key = draw(st.sampled_from(DEALER_KEYS))
    return DealerKey(key=key, seat=draw(st.integers(1, 7)) if key in SEAT_KEYS else None)


_STREAM_IDS = st.binary(min_size=STREAM_ID_LEN, max_size=STREAM_ID_LEN).filter(any)
_NONCES = st.binary(min_size=NONCE_LEN, max_size=NONCE_LEN)


@st.composite
def _stream_state(draw: st.DrawFn) -> dict[str, Any]:
    """A stream id, a send seq, and a peer stream with its delivered seq (0 when there is none)."""
    known = draw(st.booleans())
    return {
        "stream_id": draw(_STREAM_IDS),
        "send_seq": draw(st.integers(1, 0xFFFF_FFFF)),
        "peer_stream_id": draw(_STREAM_IDS) if known else bytes(STREAM_ID_LEN),
        "delivered_seq": draw(st.integers(0, 0xFFFF_FFFF)) if known else 0,
    }


@st.composite
def _hello_v2(draw: st.DrawFn) -> HelloV2:
    versions = (1, 2) if draw(st.booleans()) else (2,)
    return HelloV2(
        device_kind=draw(st.sampled_from(DEVICE_KINDS)),
        protocol_versions=versions,
        max_window=draw(st.integers(1, MAX_WINDOW)),
        model=draw(_text(32)),
        serial_number=draw(_text(32)),
        firmware_version=draw(_text(32)),
        device_nonce=draw(_NONCES),
        controller_nonce=draw(_NONCES),
        **draw(_stream_state()),
    )


@st.composite
def _auth_confirm_v2(draw: st.DrawFn) -> AuthConfirmV2:
    return AuthConfirmV2(
        device_nonce=draw(_NONCES),
        protocol_version=2,
        window=draw(st.integers(1, MAX_WINDOW)),
        **draw(_stream_state()),
    )


@st.composite
def _status_report(draw: st.DrawFn) -> StatusReport:
    state = draw(st.sampled_from(DEVICE_STATES))
    deal = draw(st.sampled_from(DEAL_PROGRESS))
    positions = () if deal == "none" else draw(_deal_request()).positions
    return StatusReport(
        state=state,
        fault_code=draw(st.integers(1, 0xFFFF)) if state == "fault" else 0,
        lamp=draw(st.sampled_from(LAMP_COLOURS)),
        deal=deal,
        positions=positions,
        cards_reported=0 if deal == "none" else draw(st.integers(0, 52)),
    )


_SPECIAL: dict[type[Message], st.SearchStrategy[Any]] = {
    HelloV2: _hello_v2(),
    AuthConfirmV2: _auth_confirm_v2(),
    StatusReport: _status_report(),
    DealRequest: _deal_request(),
    ShuffleDone: _shuffle_done(),
    Status: _status(),
    SpotState: _spot_state(),
    DealerKey: _dealer_key(),
}


def message_strategy(cls: type[Message]) -> st.SearchStrategy[Message]:
    if cls in _SPECIAL:
        return _SPECIAL[cls]
    return st.builds(cls, **{name: codec_values(codec) for name, codec in cls.FIELDS})


any_message: st.SearchStrategy[Message] = st.one_of([message_strategy(cls) for cls in ALL_MESSAGE_CLASSES])
