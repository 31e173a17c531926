"""Replays, wrong keys, unknown devices and reflections are refused and reported as SecurityAlerts."""

from __future__ import annotations

from collections.abc import Sequence

from firmware_protocol import (
    CardDealt,
    DealerKey,
    Link,
    LinkUp,
    MessageReceived,
    SecurityAlert,
    Shuffle,
)
from firmware_protocol.constants import KIND_DATA, SENDER_DEVICE, TAG_LEN
from firmware_protocol.framing import encode_frame
from tests.protocol.helpers import (
    DEVICE_ID,
    DEVICE_KEY,
    IDENTITY,
    OTHER_KEY,
    connected_pair,
    drain,
    exchange,
    make_pair,
    seeded_random_bytes,
)


def alerts(events: Sequence[object]) -> list[str]:
    return [event.reason for event in events if isinstance(event, SecurityAlert)]


def received(events: Sequence[object]) -> list[object]:
    return [event.message for event in events if isinstance(event, MessageReceived)]


def test_a_replayed_captured_frame_is_refused_and_reported_v1() -> None:
    controller, device = connected_pair(version=1)
    device.send(CardDealt(position=1, index=0, card=12), 0.1)
    captured = device.bytes_to_send()  # the attacker's capture of the first card
    controller.receive_data(captured, 0.1)
    device.receive_data(controller.bytes_to_send(), 0.1)
    device.send(CardDealt(position=1, index=1, card=13), 0.2)
    exchange(controller, device, 0.2)
    assert received(drain(controller)) == [
        CardDealt(position=1, index=0, card=12),
        CardDealt(position=1, index=1, card=13),
    ]
    controller.receive_data(captured, 0.3)  # the replay
    events = drain(controller)
    assert alerts(events) == ["replay"]
    assert received(events) == []
    assert controller.stats.refused["replay"] == 1
    assert controller.is_up  # a replay is refused, it does not break the session


def test_a_replay_older_than_the_window_is_refused_and_reported_v2() -> None:
    """In v2 a frame within one window of what was delivered may be the peer's retransmission (our
    cumulative ACK was lost): it is acknowledged again, not delivered and not an alert. Anything older
    cannot be a retransmission: it is a replay."""
    controller, device = connected_pair(window=2)
    captured = []
    for index in range(4):
        device.send(CardDealt(position=1, index=index, card=12 + index), 0.1)
        captured.append(device.bytes_to_send())
        controller.receive_data(captured[-1], 0.1)
        device.receive_data(controller.bytes_to_send(), 0.1)
    assert len(received(drain(controller))) == 4
    controller.receive_data(captured[3], 0.2)  # seq 4: the last delivered, within the window
    controller.receive_data(captured[2], 0.2)  # seq 3: delivered - 1, still within a window of 2
    events = drain(controller)
    assert alerts(events) == []
    assert received(events) == []
    assert controller.stats.duplicates == 2
    controller.receive_data(captured[1], 0.3)  # seq 2: older than any retransmission could be
    events = drain(controller)
    assert alerts(events) == ["replay"]
    assert received(events) == []
    assert controller.is_up


def test_the_last_frame_repeated_is_acknowledged_again_but_not_delivered_twice() -> None:
    controller, device = connected_pair()
    device.send(DealerKey(key="next"), 0.1)
    wire = device.bytes_to_send()
    controller.receive_data(wire, 0.1)
    controller.receive_data(wire, 0.1)
    events = drain(controller)
    assert received(events) == [DealerKey(key="next")]
    assert controller.stats.duplicates == 1


def test_a_frame_from_a_previous_session_is_refused_as_a_bad_tag() -> None:
    controller, device = connected_pair(seed=5)
    device.send(CardDealt(position=2, index=0, card=3), 0.1)
    old_session_frame = device.bytes_to_send()
    controller.receive_data(old_session_frame, 0.1)
    drain(controller)
    controller.connect(1.0)  # a new session: new nonces, new key, seq back to 1
    exchange(controller, device, 1.0)
    assert controller.is_up
    drain(controller)
    controller.receive_data(old_session_frame, 1.1)  # seq 1 again, but under the old key
    events = drain(controller)
    assert alerts(events) == ["bad_tag"]
    assert received(events) == []


def test_a_device_with_the_wrong_key_never_comes_up() -> None:
    controller = Link.controller({DEVICE_ID: DEVICE_KEY}, random_bytes=seeded_random_bytes(1))
    impostor = Link.device(DEVICE_ID, OTHER_KEY, IDENTITY, random_bytes=seeded_random_bytes(2))
    controller.connect(0.0)
    exchange(controller, impostor, 0.0)
    assert alerts(drain(controller)) == ["bad_tag"]
    assert not controller.is_up
    assert not impostor.is_up


def test_a_frame_signed_with_the_wrong_key_is_refused() -> None:
    controller, _device = connected_pair()
    forged = encode_frame(
        KIND_DATA, SENDER_DEVICE, DEVICE_ID, 1, CardDealt(position=1, index=0, card=0).encode(), key=OTHER_KEY
    )
    controller.receive_data(forged, 0.1)
    events = drain(controller)
    assert alerts(events) == ["bad_tag"]
    assert received(events) == []
    assert controller.bytes_to_send() == b""  # not even acknowledged


def test_an_unknown_device_is_refused() -> None:
    # A controller with several devices on the line challenges "any device" (device_id 0).
    controller = Link.controller({DEVICE_ID: DEVICE_KEY, 77: OTHER_KEY}, random_bytes=seeded_random_bytes(1))
    stranger = Link.device(0xDEAD, DEVICE_KEY, IDENTITY, random_bytes=seeded_random_bytes(2))
    controller.connect(0.0)
    exchange(controller, stranger, 0.0)
    events = drain(controller)
    assert alerts(events) == ["unknown_device"]
    [alert] = [event for event in events if isinstance(event, SecurityAlert)]
    assert alert.device_id == 0xDEAD
    assert not controller.is_up


def test_a_device_challenged_by_another_id_does_not_answer() -> None:
    controller = Link.controller({DEVICE_ID: DEVICE_KEY}, random_bytes=seeded_random_bytes(1))
    stranger = Link.device(0xDEAD, DEVICE_KEY, IDENTITY, random_bytes=seeded_random_bytes(2))
    controller.connect(0.0)
    exchange(controller, stranger, 0.0)
    assert alerts(drain(stranger)) == ["wrong_device"]
    assert not controller.is_up


def test_a_known_device_id_that_is_not_this_sessions_is_refused() -> None:
    controller = Link.controller({DEVICE_ID: DEVICE_KEY, 77: OTHER_KEY}, random_bytes=seeded_random_bytes(1))
    device = Link.device(DEVICE_ID, DEVICE_KEY, IDENTITY, random_bytes=seeded_random_bytes(2))
    controller.connect(0.0)
    exchange(controller, device, 0.0)
    assert controller.is_up
    drain(controller)
    other = encode_frame(KIND_DATA, SENDER_DEVICE, 77, 1, DealerKey(key="next").encode(), key=OTHER_KEY)
    controller.receive_data(other, 0.1)
    assert alerts(drain(controller)) == ["wrong_device"]


def test_a_reflected_frame_is_refused() -> None:
    controller, _device = connected_pair()
    controller.send(Shuffle(), 0.1)
    controller.receive_data(controller.bytes_to_send(), 0.1)  # an echo of our own frame
    assert alerts(drain(controller)) == ["wrong_sender"]


def test_a_forged_auth_confirm_is_refused_by_the_device() -> None:
    controller, device = make_pair()
    impostor = Link.controller({DEVICE_ID: OTHER_KEY}, random_bytes=seeded_random_bytes(9))
    impostor.connect(0.0)
    device.receive_data(impostor.bytes_to_send(), 0.0)
    impostor.receive_data(device.bytes_to_send(), 0.0)  # the Hello fails the impostor's key
    assert alerts(drain(impostor)) == ["bad_tag"]
    # The impostor cannot answer with a valid confirm; a confirm under the wrong key is refused.
    controller.connect(0.0)
    exchange(controller, device, 0.0)
    assert controller.is_up
    assert [type(event) for event in drain(device)] == [LinkUp]


def test_a_replayed_hello_does_not_bring_a_new_session_up() -> None:
    controller, device = make_pair()
    controller.connect(0.0)
    device.receive_data(controller.bytes_to_send(), 0.0)
    old_hello = device.bytes_to_send()
    controller.receive_data(old_hello, 0.0)
    assert controller.is_up
    controller.connect(5.0)  # a new challenge, a new controller nonce
    controller.bytes_to_send()
    drain(controller)
    controller.receive_data(old_hello, 5.0)
    assert alerts(drain(controller)) == ["stale_handshake"]
    assert not controller.is_up


def test_nonces_are_fresh_and_sessions_get_different_keys() -> None:
    seen_challenges = set()
    for _ in range(20):
        controller = Link.controller({DEVICE_ID: DEVICE_KEY})  # the real CSPRNG
        controller.connect(0.0)
        seen_challenges.add(controller.bytes_to_send())
    assert len(seen_challenges) == 20
    assert TAG_LEN == 16


def test_a_late_copy_of_the_answered_challenge_does_not_end_the_session() -> None:
    controller, device = make_pair()
    controller.connect(0.0)
    challenge = controller.bytes_to_send()
    device.receive_data(challenge, 0.0)
    exchange(controller, device, 0.0)
    assert device.is_up
    drain(device)
    device.receive_data(challenge, 0.1)  # the wire duplicated it
    assert device.is_up
    assert drain(device) == []
    assert device.bytes_to_send() == b""
