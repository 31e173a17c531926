"""Messages: every type round-trips through bytes and JSON; invalid fields are refused by name."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from firmware_protocol.errors import FieldError
from firmware_protocol.messages import (
    ALL_MESSAGE_CLASSES,
    MESSAGE_TYPES,
    CardDealt,
    DealerKey,
    DealRequest,
    Message,
    ShowText,
    ShuffleDone,
    SpotState,
    Status,
    StatusReport,
    decode_message,
    message_from_json,
    message_to_json,
)
from tests.protocol.strategies import any_message, message_strategy


@pytest.mark.parametrize("cls", ALL_MESSAGE_CLASSES, ids=lambda cls: cls.NAME)
@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_every_message_round_trips_through_bytes_and_json(cls: type[Message], data: st.DataObject) -> None:
    message = data.draw(message_strategy(cls))
    payload = message.encode()
    assert payload[0] == cls.TYPE
    assert decode_message(payload) == message
    assert cls.decode(payload) == message
    assert Message.decode(payload) == message
    assert message_from_json(message_to_json(message)) == message


@settings(max_examples=500, deadline=None)
@given(payload=st.binary(max_size=80))
def test_arbitrary_payloads_decode_or_raise_field_error_only(payload: bytes) -> None:
    try:
        message = decode_message(payload)
    except FieldError:
        return
    assert message.encode() == payload  # anything accepted is the canonical encoding


@settings(max_examples=300, deadline=None)
@given(message=any_message, cut=st.integers(min_value=1, max_value=300))
def test_truncated_or_extended_payloads_are_refused(message: Message, cut: int) -> None:
    payload = message.encode()
    if cut < len(payload):
        with pytest.raises(FieldError):
            decode_message(payload[:cut])
    with pytest.raises(FieldError, match="after the last field"):
        decode_message(payload + b"\x00")


def test_type_codes_are_unique_and_every_issue_message_exists() -> None:
    names = {cls.NAME for cls in ALL_MESSAGE_CLASSES}
    assert len(MESSAGE_TYPES) == len(ALL_MESSAGE_CLASSES)
    assert names == {
        "auth_challenge", "hello", "auth_confirm", "heartbeat", "status", "error", "reset",
        "shuffle", "shuffle_done", "deal_request", "card_dealt", "hand_complete", "shuffler_fault",
        "spot_state", "lock_bets", "unlock_bets", "spot_lamp",
        "show_button", "show_text", "show_seat_result", "dealer_key",
        # v2
        "hello_v2", "auth_confirm_v2", "status_query", "status_report",
        # v2, issue 13: the designated player's bank keyed at the dealer display
        "dp_bank_keyed",
    }  # fmt: skip


@pytest.mark.parametrize(
    ("build", "field"),
    [
        (lambda: CardDealt(position=3, index=0, card=52), "card"),
        (lambda: CardDealt(position=8, index=0, card=1), "position"),
        (lambda: CardDealt(position=True, index=0, card=1), "position"),
        (lambda: DealRequest(positions=((1, 7), (1, 7))), "positions[1]"),
        (lambda: DealRequest(positions=((1, 30), (2, 30))), "positions"),
        (lambda: DealRequest(positions=()), "positions"),
        (lambda: ShuffleDone(card_count=52, missing_cards=(5, 3), extra_cards=()), "missing_cards[1]"),
        (lambda: ShuffleDone(card_count=52, missing_cards=(5,), extra_cards=(5,)), "extra_cards"),
        (lambda: Status(state="fault", fault_code=0, lamp="red"), "fault_code"),
        (lambda: Status(state="ready", fault_code=0, lamp="purple"), "lamp"),  # type: ignore[arg-type]
        (lambda: SpotState(seat=0, spot=0, amount_cents=100, chip_count=1, locked=False), "seat"),
        (lambda: SpotState(seat=1, spot=0, amount_cents=-1, chip_count=1, locked=False), "amount_cents"),
        (lambda: SpotState(seat=1, spot=0, amount_cents=100, chip_count=0, locked=False), "chip_count"),
        (lambda: DealerKey(key="fold_seat", seat=None), "seat"),
        (lambda: DealerKey(key="next", seat=3), "seat"),
        (lambda: DealerKey(key="kill_seat", seat=None), "seat"),
        (lambda: ShowText(text="x" * 121), "text"),
        (lambda: ShowText(text="line\nbreak"), "text"),
    ],
)
def test_invalid_fields_are_refused_naming_the_field(build: object, field: str) -> None:
    with pytest.raises(FieldError) as caught:
        build()  # type: ignore[operator]
    assert caught.value.field == field


def test_json_errors_name_the_field() -> None:
    with pytest.raises(FieldError, match=r"fields\.card: 60 is out of range"):
        message_from_json({"type": "card_dealt", "fields": {"position": 1, "index": 0, "card": 60}})
    with pytest.raises(FieldError, match=r"fields\.index: is missing"):
        message_from_json({"type": "card_dealt", "fields": {"position": 1, "card": 6}})
    with pytest.raises(FieldError, match=r"fields\.colour: is not a field"):
        message_from_json(
            {"type": "card_dealt", "fields": {"position": 1, "index": 0, "card": 6, "colour": 1}}
        )
    with pytest.raises(FieldError, match="is not a message type"):
        message_from_json({"type": "teleport", "fields": {}})
    with pytest.raises(FieldError, match=r"fields\.card: must be an integer"):
        message_from_json({"type": "card_dealt", "fields": {"position": 1, "index": 0, "card": "As"}})


def test_a_class_decodes_only_its_own_type() -> None:
    with pytest.raises(FieldError, match="payload is a card_dealt, not a status"):
        Status.decode(CardDealt(position=1, index=0, card=0).encode())


def test_card_dealt_wire_layout() -> None:
    assert CardDealt(position=3, index=0, card=51).encode() == bytes([0x23, 3, 0, 51])
    assert DealRequest(positions=((1, 7), (0, 7))).encode() == bytes([0x22, 2, 1, 7, 0, 7])


def test_a_message_is_its_field_declarations_in_order() -> None:
    """Each field is declared once, with its codec; FIELDS (what encodes and decodes) is made from the
    declarations, in their order."""
    assert [name for name, _ in StatusReport.FIELDS] == [
        "state",
        "fault_code",
        "lamp",
        "deal",
        "positions",
        "cards_reported",
    ]
    late = (
        "from __future__ import annotations\n"
        "from typing import Annotated\n"
        "from firmware_protocol.field_codecs import U8\n"
        "from firmware_protocol.messages import Message\n"
        "class Late(Message):\n"
        "    level: Annotated[int, U8]\n"
    )
    # Postponed annotations would leave the codecs as text: refused when the class is made, not an
    # empty FIELDS that encodes a message without its fields.
    with pytest.raises(TypeError, match=r"^Late.level: messages.py must not postpone its annotations$"):
        exec(late, {"__name__": "late_message"})

    head = (
        "from dataclasses import dataclass\n"
        "from typing import Annotated, ClassVar\n"
        "from firmware_protocol.field_codecs import U8, U16\n"
        "from firmware_protocol.messages import Message\n"
        "@dataclass(frozen=True, slots=True)\n"
    )
    # A field declared without its codec would be left out of FIELDS: the message would build and then
    # encode without it (b=999 lost on the wire). Refused when the class is made, naming the field.
    for declaration in [
        "b: int",  # no Annotated at all
        'b: Annotated[int, "a note, not a codec"]',
        "b: Annotated[int, U8, U16]",  # two codecs: which one writes it?
    ]:
        lossy = f"{head}class Lossy(Message):\n    a: Annotated[int, U8]\n    {declaration}\n"
        with pytest.raises(TypeError, match=r"^Lossy\.b: a message field is declared with exactly one codec"):
            # dont_inherit: not this module's `from __future__ import annotations`.
            exec(compile(lossy, "lossy_message", "exec", dont_inherit=True), {"__name__": "lossy_message"})
    # A class constant is no field: declared ClassVar, it stays out of FIELDS and off the wire.
    kept: dict[str, object] = {"__name__": "kept_message"}
    source = (
        f"{head}class Kept(Message):\n    TYPE = 0x7F\n    LIMIT: ClassVar[int] = 9\n    ALSO: ClassVar = 1\n"
        "    a: Annotated[int, U8]\n    b: Annotated[int, U16]\n"
    )
    exec(compile(source, "kept_message", "exec", dont_inherit=True), kept)
    made = kept["Kept"](a=1, b=999)  # type: ignore[operator]
    assert [name for name, _ in made.FIELDS] == ["a", "b"]
    assert made.encode() == bytes((0x7F, 1)) + (999).to_bytes(2, "big")
