"""Handshake alone: a controller's and a device's Handshake exchange real frames (no Link, no streams):
version and window negotiation, the stream positions each side states, repeated messages, refusals,
the retry timer, and the session key both sides derive."""

from __future__ import annotations

import pytest

from firmware_protocol.constants import (
    HANDSHAKE_MAX_RETRIES,
    HANDSHAKE_RETRY_S,
    KIND_HANDSHAKE,
    NONCE_LEN,
    PROTOCOL_V1,
    PROTOCOL_V2,
    SENDER_CONTROLLER,
    SENDER_DEVICE,
    STREAM_ID_LEN,
)
from firmware_protocol.events import NO_STREAM, LinkState, Role
from firmware_protocol.framing import DecodedFrame, Frame, FrameDecoder, encode_frame
from firmware_protocol.handshake import Agreed, Challenged, Handshake, Refused, Repeated, StreamPosition
from firmware_protocol.messages import AuthChallenge, HelloV2, ShowText
from tests.protocol.helpers import DEVICE_ID, DEVICE_KEY, IDENTITY, OTHER_KEY, seeded_random_bytes

DEVICE_STREAM = bytes(range(1, 9))
CONTROLLER_STREAM = bytes(range(21, 29))
DEVICE_POSITION = StreamPosition(DEVICE_STREAM, 1, NO_STREAM, 0)
CONTROLLER_POSITION = StreamPosition(CONTROLLER_STREAM, 5, DEVICE_STREAM, 0)


def frame_of(wire: bytes) -> Frame:
    [decoded] = FrameDecoder().feed(wire)
    assert isinstance(decoded, DecodedFrame)
    return decoded.frame


def pair(
    *, controller_versions: tuple[int, ...] = (1, 2), device_versions: tuple[int, ...] = (1, 2)
) -> tuple[Handshake, Handshake]:
    controller = Handshake(
        Role.CONTROLLER,
        {DEVICE_ID: DEVICE_KEY},
        random_bytes=seeded_random_bytes(1),
        versions=controller_versions,
        window=8,
    )
    device = Handshake(
        Role.DEVICE,
        {DEVICE_ID: DEVICE_KEY},
        identity=IDENTITY,
        random_bytes=seeded_random_bytes(2),
        versions=device_versions,
        window=4,
    )
    return controller, device


def hello_for(controller: Handshake, device: Handshake) -> bytes:
    """The controller challenges; the device answers (stating DEVICE_POSITION if it speaks v2)."""
    challenged = device.on_frame(frame_of(controller.challenge(0.0)), LinkState.IDLE, 0.0)
    assert isinstance(challenged, Challenged)
    position = DEVICE_POSITION if PROTOCOL_V2 in device.versions else None
    return device.answer(challenged.controller_nonce, position, 0.0)


def test_a_v2_handshake_agrees_the_smaller_window_and_carries_both_stream_positions() -> None:
    controller, device = pair()
    agreed = controller.on_frame(frame_of(hello_for(controller, device)), LinkState.HANDSHAKING, 0.0)
    assert isinstance(agreed, Agreed)
    assert (agreed.device_id, agreed.version, agreed.window) == (DEVICE_ID, PROTOCOL_V2, 4)
    assert agreed.hello == device.hello
    assert agreed.peer == DEVICE_POSITION
    confirm = controller.confirm(agreed, CONTROLLER_POSITION)
    assert controller.device_id == DEVICE_ID
    confirmed = device.on_frame(frame_of(confirm), LinkState.HANDSHAKING, 0.0)
    assert confirmed == Agreed(DEVICE_ID, agreed.hello, PROTOCOL_V2, 4, CONTROLLER_POSITION)
    assert isinstance(device.hello, HelloV2)
    assert (device.hello.protocol_versions, device.hello.max_window) == ((1, 2), 4)


def test_both_sides_open_the_same_session() -> None:
    controller, device = pair()
    agreed = controller.on_frame(frame_of(hello_for(controller, device)), LinkState.HANDSHAKING, 0.0)
    assert isinstance(agreed, Agreed)
    device.on_frame(frame_of(controller.confirm(agreed, CONTROLLER_POSITION)), LinkState.HANDSHAKING, 0.0)
    controller_session = controller.open_session(version=PROTOCOL_V2, window=4, now_s=0.0)
    device_session = device.open_session(version=PROTOCOL_V2, window=4, now_s=0.0)
    sealed = device_session.seal_message(1, ShowText(text="hello"))
    assert controller_session.accept(frame_of(sealed), 0.0) is None
    assert controller_session.hello == device_session.hello == device.hello


@pytest.mark.parametrize(
    ("controller_versions", "device_versions"),
    [((1, 2), (1,)), ((1,), (1, 2))],
    ids=["v1 device", "v1 controller"],
)
def test_a_side_held_to_v1_gets_a_v1_session(
    controller_versions: tuple[int, ...], device_versions: tuple[int, ...]
) -> None:
    controller, device = pair(controller_versions=controller_versions, device_versions=device_versions)
    agreed = controller.on_frame(frame_of(hello_for(controller, device)), LinkState.HANDSHAKING, 0.0)
    assert isinstance(agreed, Agreed)
    assert (agreed.version, agreed.window, agreed.peer) == (PROTOCOL_V1, 1, None)
    confirmed = device.on_frame(frame_of(controller.confirm(agreed, None)), LinkState.HANDSHAKING, 0.0)
    assert isinstance(confirmed, Agreed)
    assert (confirmed.version, confirmed.window, confirmed.peer) == (PROTOCOL_V1, 1, None)


def test_no_common_version_fails_the_handshake_and_takes_the_link_down() -> None:
    controller, device = pair(controller_versions=(1,), device_versions=(2,))
    refused = controller.on_frame(frame_of(hello_for(controller, device)), LinkState.HANDSHAKING, 0.0)
    assert isinstance(refused, Refused)
    assert (refused.reason, refused.go_down) == ("handshake_failed", "unsupported_protocol_version")


def test_repeated_messages_are_answered_again_or_absorbed() -> None:
    controller, device = pair()
    challenge = controller.challenge(0.0)
    challenged = device.on_frame(frame_of(challenge), LinkState.IDLE, 0.0)
    assert isinstance(challenged, Challenged)
    hello = device.answer(challenged.controller_nonce, DEVICE_POSITION, 0.0)
    # The Hello was lost and the controller's challenge comes again: the same Hello, same nonces.
    assert device.on_frame(frame_of(challenge), LinkState.HANDSHAKING, 0.2) == Repeated(
        hello, duplicate=False
    )
    agreed = controller.on_frame(frame_of(hello), LinkState.HANDSHAKING, 0.0)
    assert isinstance(agreed, Agreed)
    confirm = controller.confirm(agreed, CONTROLLER_POSITION)
    # Once up: a late Hello is answered with the same confirm; late copies on the device are absorbed.
    assert controller.on_frame(frame_of(hello), LinkState.UP, 0.3) == Repeated(confirm, duplicate=True)
    device.on_frame(frame_of(confirm), LinkState.HANDSHAKING, 0.3)
    assert device.on_frame(frame_of(challenge), LinkState.UP, 0.4) == Repeated(b"", duplicate=True)
    assert device.on_frame(frame_of(confirm), LinkState.UP, 0.4) == Repeated(b"", duplicate=True)


def test_a_new_challenge_is_a_new_handshake_even_when_up() -> None:
    controller, device = pair()
    hello_for(controller, device)
    challenged = device.on_frame(frame_of(controller.challenge(1.0)), LinkState.UP, 1.0)
    assert isinstance(challenged, Challenged)


def refusal(outcome: object) -> str:
    assert isinstance(outcome, Refused), outcome
    return outcome.reason


def test_a_hello_is_refused_for_its_key_its_device_its_nonce_or_its_type() -> None:
    controller, device = pair()
    hello = frame_of(hello_for(controller, device))
    forged = encode_frame(
        KIND_HANDSHAKE, SENDER_DEVICE, DEVICE_ID, 0, hello.payload, key=OTHER_KEY, version=PROTOCOL_V2
    )
    assert refusal(controller.on_frame(frame_of(forged), LinkState.HANDSHAKING, 0.0)) == "bad_tag"
    stranger = encode_frame(
        KIND_HANDSHAKE, SENDER_DEVICE, 0x99, 0, hello.payload, key=OTHER_KEY, version=PROTOCOL_V2
    )
    assert refusal(controller.on_frame(frame_of(stranger), LinkState.HANDSHAKING, 0.0)) == "unknown_device"
    assert refusal(controller.on_frame(hello, LinkState.DOWN, 0.0)) == "stale_handshake"
    controller.challenge(1.0)  # a new challenge: the old Hello answers none of ours
    assert refusal(controller.on_frame(hello, LinkState.HANDSHAKING, 1.0)) == "stale_handshake"
    in_v1_frame = encode_frame(KIND_HANDSHAKE, SENDER_DEVICE, DEVICE_ID, 0, hello.payload, key=DEVICE_KEY)
    assert (
        refusal(controller.on_frame(frame_of(in_v1_frame), LinkState.HANDSHAKING, 1.0)) == "handshake_failed"
    )
    challenge_from_device = frame_of(controller.challenge(2.0))
    assert (
        refusal(controller.on_frame(challenge_from_device, LinkState.HANDSHAKING, 2.0)) == "handshake_failed"
    )


def test_a_confirm_is_refused_for_another_handshake_a_timed_out_one_or_a_window_not_offered() -> None:
    controller, device = pair()
    agreed = controller.on_frame(frame_of(hello_for(controller, device)), LinkState.HANDSHAKING, 0.0)
    assert isinstance(agreed, Agreed)
    confirm = frame_of(controller.confirm(agreed, CONTROLLER_POSITION))
    assert refusal(device.on_frame(confirm, LinkState.DOWN, 0.0)) == "stale_handshake"
    too_wide = Agreed(agreed.device_id, agreed.hello, PROTOCOL_V2, 8, agreed.peer)
    wide_confirm = frame_of(controller.confirm(too_wide, CONTROLLER_POSITION))
    assert refusal(device.on_frame(wide_confirm, LinkState.HANDSHAKING, 0.0)) == "handshake_failed"
    hello_for(controller, device)  # the device answered a newer challenge: another device nonce
    assert refusal(device.on_frame(confirm, LinkState.HANDSHAKING, 0.0)) == "stale_handshake"


def test_a_challenge_must_be_unsigned_and_for_this_device() -> None:
    _controller, device = pair()
    payload = AuthChallenge(controller_nonce=bytes(NONCE_LEN)).encode()
    signed = encode_frame(KIND_HANDSHAKE, SENDER_CONTROLLER, DEVICE_ID, 0, payload, key=DEVICE_KEY)
    assert refusal(device.on_frame(frame_of(signed), LinkState.IDLE, 0.0)) == "bad_tag"
    other = encode_frame(KIND_HANDSHAKE, SENDER_CONTROLLER, 0x99, 0, payload, key=None)
    assert refusal(device.on_frame(frame_of(other), LinkState.IDLE, 0.0)) == "wrong_device"
    unsigned = encode_frame(KIND_HANDSHAKE, SENDER_CONTROLLER, DEVICE_ID, 0, payload, key=None)
    assert isinstance(device.on_frame(frame_of(unsigned), LinkState.IDLE, 0.0), Challenged)


def test_the_handshake_is_sent_again_on_a_timer_until_its_retries_are_spent() -> None:
    controller, _device = pair()
    challenge = controller.challenge(0.0)
    assert controller.deadline_s() == HANDSHAKE_RETRY_S
    assert not controller.retry_due(HANDSHAKE_RETRY_S / 2)
    now_s = 0.0
    for _ in range(HANDSHAKE_MAX_RETRIES):
        now_s += HANDSHAKE_RETRY_S
        assert controller.retry_due(now_s)
        assert controller.retry(now_s) == challenge
    assert controller.retry(now_s + HANDSHAKE_RETRY_S) is None


def test_a_stream_id_is_never_all_zeros() -> None:
    draws = iter([NO_STREAM, DEVICE_STREAM])
    handshake = Handshake(Role.CONTROLLER, {DEVICE_ID: DEVICE_KEY}, random_bytes=lambda count: next(draws))
    assert handshake.fresh_stream_id() == DEVICE_STREAM


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"role": Role.CONTROLLER, "keyring": {}}, "keyring is empty"),
        ({"role": Role.CONTROLLER, "keyring": {0: DEVICE_KEY}}, "out of range"),
        (
            {"role": Role.DEVICE, "keyring": {1: DEVICE_KEY, 2: OTHER_KEY}, "identity": IDENTITY},
            "exactly its own",
        ),
        ({"role": Role.DEVICE, "keyring": {DEVICE_ID: DEVICE_KEY}}, "needs the identity"),
        ({"role": Role.CONTROLLER, "keyring": {DEVICE_ID: DEVICE_KEY}, "versions": (3,)}, "this link speaks"),
        ({"role": Role.CONTROLLER, "keyring": {DEVICE_ID: DEVICE_KEY}, "window": 0}, "window 0"),
    ],
)
def test_bad_arguments_are_refused_with_one_line(arguments: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Handshake(**arguments)  # type: ignore[arg-type]


def test_a_random_source_of_the_wrong_length_is_refused() -> None:
    handshake = Handshake(
        Role.CONTROLLER, {DEVICE_ID: DEVICE_KEY}, random_bytes=lambda count: bytes(count - 1)
    )
    with pytest.raises(ValueError, match=f"not {STREAM_ID_LEN}"):
        handshake.fresh_stream_id()
    with pytest.raises(ValueError, match="random_bytes returned"):
        handshake.challenge(0.0)
