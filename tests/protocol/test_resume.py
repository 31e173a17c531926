"""v2 sessions resume: across any number of reconnects, each side's application receives exactly the
other side's messages, once each, in order - over lossy lines, with the cable pulled at random during
deals - with no filter anywhere above the Link. A v2 controller drives a v1 device in v1.

Everything here is sans-I/O: two Links, an in-memory wire with seeded faults, and a simulated clock
advanced in fixed ticks; every loop is bounded by the simulated time limit.
"""

from __future__ import annotations

import heapq
import random
from dataclasses import dataclass, field

import pytest

from firmware_protocol import (
    CardDealt,
    DealerKey,
    DealRequest,
    DeviceIdentity,
    HandComplete,
    Link,
    LinkDown,
    LinkUp,
    Message,
    MessageAcked,
    MessageReceived,
    MessageRejected,
    SecurityAlert,
    ShowText,
    StatusQuery,
)
from firmware_protocol.constants import LINK_SILENCE_TIMEOUT_S
from firmware_protocol.errors import LinkError
from firmware_protocol.vector_inputs import VECTOR_DEVICE_ID, VECTOR_DEVICE_KEY, VECTOR_DEVICE_NONCE
from firmware_protocol.vectors import build_vectors
from tests.protocol.helpers import connected_pair, drain, exchange, make_pair, make_v1_pair

TICK_S = 0.005
RECONNECT_AFTER_S = 0.05


@dataclass(frozen=True)
class LineFaults:
    """Per frame: dropped, duplicated, one bit flipped; and the bytes of each read split at random."""

    drop: float
    duplicate: float
    corrupt: float
    split: float
    max_delay_s: float = 0.01


ONE_PERCENT = LineFaults(drop=0.01, duplicate=0.01, corrupt=0.01, split=0.01)
FIVE_PERCENT = LineFaults(drop=0.05, duplicate=0.05, corrupt=0.05, split=0.05)
CLEAN = LineFaults(0, 0, 0, 0, 0.0)


@dataclass
class Line:
    """One direction of a cable that can be pulled: while unplugged nothing passes either way."""

    rng: random.Random
    faults: LineFaults
    plugged: bool = True
    _in_flight: list[tuple[float, int, bytes]] = field(default_factory=list)
    _counter: int = 0

    def push(self, data: bytes, now_s: float) -> None:
        if not self.plugged:
            return
        for piece in data.split(b"\x00"):
            if not piece:
                continue
            frame = bytearray(b"\x00" + piece + b"\x00")
            if self.rng.random() < self.faults.drop:
                continue
            if self.rng.random() < self.faults.corrupt:
                bit = self.rng.randrange(len(frame) * 8)
                frame[bit // 8] ^= 1 << (bit % 8)
            for _ in range(2 if self.rng.random() < self.faults.duplicate else 1):
                self._counter += 1
                due_s = now_s + self.rng.uniform(0, self.faults.max_delay_s)
                heapq.heappush(self._in_flight, (due_s, self._counter, bytes(frame)))

    def unplug(self) -> None:
        self.plugged = False
        self._in_flight.clear()

    def deliver(self, link: Link, now_s: float) -> None:
        data = bytearray()
        while self._in_flight and self._in_flight[0][0] <= now_s:
            data += heapq.heappop(self._in_flight)[2]
        # A read returns whatever the driver had: cut the bytes anywhere, as a serial port does.
        start = 0
        for index in range(1, len(data)):
            if self.rng.random() < self.faults.split:
                link.receive_data(bytes(data[start:index]), now_s)
                start = index
        if start < len(data):
            link.receive_data(bytes(data[start:]), now_s)


@dataclass
class App:
    """One side's application: an outbox that outlives sessions (as the firmware's does), what it
    handed to the Link, and what the Link delivered to it."""

    link: Link
    outbox: list[Message] = field(default_factory=list)
    handed: list[Message] = field(default_factory=list)
    received: list[Message] = field(default_factory=list)
    acked: set[int] = field(default_factory=set)
    alerts: list[SecurityAlert] = field(default_factory=list)
    downs: list[LinkDown] = field(default_factory=list)
    ups: list[LinkUp] = field(default_factory=list)

    def collect(self) -> None:
        for event in self.link.events():
            if isinstance(event, MessageReceived):
                self.received.append(event.message)
            elif isinstance(event, MessageAcked):
                self.acked.add(event.seq)
            elif isinstance(event, LinkUp):
                self.ups.append(event)
                assert event.dropped == ()
            elif isinstance(event, LinkDown):
                self.downs.append(event)
                # v1 hands back what was not acknowledged; v2 keeps it. Resend v1's (at least once).
                self.outbox[:0] = [message for _, message in event.unacknowledged]
            elif isinstance(event, SecurityAlert):
                self.alerts.append(event)
            elif isinstance(event, MessageRejected):  # pragma: no cover - would be a wrong message
                raise AssertionError(f"an authentic frame carried a wrong message: {event}")

    def flush(self, now_s: float) -> None:
        while self.link.is_up and self.outbox and self.link.pending_count < 32:
            message = self.outbox.pop(0)
            self.link.send(message, now_s)
            self.handed.append(message)


def deal_messages(deal: int) -> list[Message]:
    """A deal as the shoe reports it: 7 seats and the banker, 7 cards each, each hand completed."""
    messages: list[Message] = []
    for position in (1, 2, 3, 4, 5, 6, 0):
        for index in range(7):
            messages.append(
                CardDealt(position=position, index=index, card=(deal * 13 + position * 7 + index) % 52)
            )
        messages.append(HandComplete(position=position, card_count=7))
    return messages


@dataclass
class Run:
    controller: App
    device: App
    controller_sent: list[Message]
    device_sent: list[Message]
    unplugs: int
    reconnects: int
    now_s: float


def run_with_unplugs(
    seed: int,
    faults: LineFaults,
    *,
    unplugs: int,
    deals: int,
    window: int = 8,
    limit_s: float = 2_000.0,
) -> Run:
    """Deals flow up and commands down while the cable is pulled ``unplugs`` times at random moments
    (for random lengths, some shorter than loss detection, some far longer; half the time the port
    reports the loss at once, as a USB or pty close does). The controller reconnects whenever its
    link is down and the cable is in."""
    rng = random.Random(seed)
    controller_link, device_link = make_pair(seed, window=window)
    controller, device = App(controller_link), App(device_link)
    controller_sent: list[Message] = []
    device_sent: list[Message] = []
    up_line, down_line = Line(rng, faults), Line(rng, faults)
    now_s = 0.0
    plugged_at_s = 0.0
    next_unplug_s = rng.uniform(0.2, 1.5)
    unplugs_done = 0
    reconnect_at_s: float | None = 0.0
    deal_number = 0
    next_deal_s = 0.1
    while now_s < limit_s:
        now_s = round(now_s + TICK_S, 6)
        # the cable
        if unplugs_done < unplugs and now_s >= next_unplug_s and up_line.plugged:
            up_line.unplug()
            down_line.unplug()
            unplugs_done += 1
            if rng.random() < 0.5:  # the port says so at once (USB, pty); otherwise only timers tell
                controller_link.connection_lost("port_closed")
                device_link.connection_lost("port_closed")
            plugged_at_s = now_s + rng.choice((0.05, 0.2, 0.5, 1.0, LINK_SILENCE_TIMEOUT_S + 0.5))
        if not up_line.plugged and now_s >= plugged_at_s:
            up_line.plugged = down_line.plugged = True
            next_unplug_s = now_s + rng.uniform(0.1, 1.5)
        # the applications: a deal now and then from the shoe; commands and a query from the controller
        if deal_number < deals and now_s >= next_deal_s:
            cards = deal_messages(deal_number)
            device.outbox += cards
            device_sent += cards
            command = DealRequest(positions=((1, 7), (0, 7)))
            text = ShowText(text=f"deal {deal_number}")
            controller.outbox += [command, text, StatusQuery()]
            controller_sent += [command, text, StatusQuery()]
            deal_number += 1
            next_deal_s = now_s + rng.uniform(0.2, 1.0)
        # the wires and the timers
        down_line.deliver(device_link, now_s)
        up_line.deliver(controller_link, now_s)
        for app in (controller, device):
            app.link.handle_timers(now_s)
            app.collect()
        if not controller_link.is_up and controller_link.state.value != "handshaking":
            if reconnect_at_s is None:
                reconnect_at_s = now_s + RECONNECT_AFTER_S
            elif now_s >= reconnect_at_s and up_line.plugged:
                controller_link.connect(now_s)
                reconnect_at_s = None
        for app in (controller, device):
            app.flush(now_s)
        down_line.push(controller_link.bytes_to_send(), now_s)
        up_line.push(device_link.bytes_to_send(), now_s)
        if (
            deal_number == deals
            and unplugs_done == unplugs
            and up_line.plugged
            and controller.received == device_sent
            and device.received == controller_sent
            and controller_link.pending_count == 0
            and device_link.pending_count == 0
        ):
            break
    return Run(
        controller,
        device,
        controller_sent,
        device_sent,
        unplugs_done,
        reconnects=len(controller.ups) - 1,
        now_s=now_s,
    )


def check_exactly_once(run: Run) -> None:
    # Exactly once, in order, across every reconnect: the whole lists, not a prefix.
    assert run.controller.received == run.device_sent
    assert run.device.received == run.controller_sent
    # No application ever resent anything: the link did it all.
    assert run.device.handed == run.device_sent
    assert run.controller.handed == run.controller_sent
    assert run.device.link.pending_count == run.controller.link.pending_count == 0


@pytest.mark.parametrize(("faults", "seed"), [(ONE_PERCENT, 11), (FIVE_PERCENT, 12)], ids=["1%", "5%"])
def test_a_hundred_unplugs_during_deals_deliver_every_message_exactly_once_in_order(
    faults: LineFaults, seed: int
) -> None:
    run = run_with_unplugs(seed, faults, unplugs=100, deals=60)
    assert run.unplugs == 100
    check_exactly_once(run)
    assert run.reconnects >= 30  # most unplugs outlast loss detection and cost a new session
    assert any(up.resumed for up in run.controller.ups[1:])
    assert run.device.link.stats.resent_after_resume > 0  # something was really resent
    assert len(run.device_sent) == 60 * 56


@pytest.mark.parametrize("window", [1, 4, 8])
def test_every_window_resumes_exactly(window: int) -> None:
    run = run_with_unplugs(100 + window, FIVE_PERCENT, unplugs=15, deals=10, window=window)
    check_exactly_once(run)
    assert run.controller.link.window == window


def test_a_clean_line_without_unplugs_needs_one_session() -> None:
    run = run_with_unplugs(5, CLEAN, unplugs=0, deals=5)
    check_exactly_once(run)
    assert run.reconnects == 0
    assert run.controller.link.stats.retransmissions == 0


# --- the handshake states what each side has -----------------------------------------------------------
def test_a_genuine_repeated_key_press_across_a_reconnect_is_delivered_twice() -> None:
    """The dealer presses "next", the line drops before the ACK comes back, and the dealer presses
    "next" again: two presses, two deliveries. (v1's driver dropped the second as a duplicate.)"""
    controller, device = connected_pair()
    device.send(DealerKey(key="next"), 0.1)
    controller.receive_data(device.bytes_to_send(), 0.1)
    controller.bytes_to_send()  # the ACK is lost with the line
    assert [event.message for event in drain(controller) if isinstance(event, MessageReceived)] == [
        DealerKey(key="next")
    ]
    controller.connection_lost("port_closed")
    device.connection_lost("port_closed")
    drain(controller)
    drain(device)
    controller.connect(1.0)
    exchange(controller, device, 1.0)
    ups = [event for event in drain(device) if isinstance(event, LinkUp)]
    assert ups
    assert ups[0].resumed
    # The handshake told the device the first press was delivered: it is acknowledged, not resent.
    assert device.pending_count == 0
    device.send(DealerKey(key="next"), 1.1)
    exchange(controller, device, 1.1)
    presses = [event.message for event in drain(controller) if isinstance(event, MessageReceived)]
    assert presses == [DealerKey(key="next")]  # the second press, delivered once more
    assert controller.stats.duplicates == 0


def test_what_the_peer_lacks_is_resent_and_what_it_has_is_not() -> None:
    controller, device = connected_pair(window=4)
    for index in range(6):
        device.send(CardDealt(position=1, index=index, card=index), 0.1)
    wire = device.bytes_to_send()  # the first 4 (the window); 2 wait
    frames = [b"\x00" + piece + b"\x00" for piece in wire.split(b"\x00") if piece]
    assert len(frames) == 4
    controller.receive_data(b"".join(frames[:3]), 0.1)  # the 4th is lost, and every ACK too
    controller.bytes_to_send()
    got = [event.message for event in drain(controller) if isinstance(event, MessageReceived)]
    assert [message.index for message in got if isinstance(message, CardDealt)] == [0, 1, 2]
    controller.connect(0.5)  # the controller noticed something and reconnects
    exchange(controller, device, 0.5, rounds=12)
    got = [event.message for event in drain(controller) if isinstance(event, MessageReceived)]
    assert [message.index for message in got if isinstance(message, CardDealt)] == [3, 4, 5]
    assert device.stats.resent_after_resume == 3
    assert device.pending_count == 0


def test_a_power_cycled_device_is_not_sent_what_was_queued_for_its_old_self() -> None:
    """The device loses power with a command on its way: back, it has a new stream and knows nothing
    of ours. The command is not replayed into the new device (a deal request to a shoe that lost its
    deck would be worse than useless): the link hands it back in LinkUp.dropped, and the seqs go on
    from where the handshake said, so what is sent next arrives."""
    controller, device = connected_pair()
    controller.send(ShowText(text="before"), 0.1)
    exchange(controller, device, 0.1)
    drain(device)
    seq = controller.send(ShowText(text="while it reboots"), 0.2)
    controller.bytes_to_send()  # lost: the device is rebooting
    controller.connection_lost("port_closed")
    drain(controller)
    rebooted = make_pair(99)[1]  # a new Link: a new stream, nothing delivered
    controller.connect(1.0)
    exchange(controller, rebooted, 1.0, rounds=10)
    [up] = [event for event in drain(controller) if isinstance(event, LinkUp)]
    assert not up.resumed  # the device did not know our stream
    assert up.dropped == ((seq, ShowText(text="while it reboots")),)
    assert [event for event in drain(rebooted) if isinstance(event, MessageReceived)] == []
    assert controller.send(ShowText(text="after"), 1.1) == seq  # the given-up seq is used again
    exchange(controller, rebooted, 1.1)
    got = [event.message for event in drain(rebooted) if isinstance(event, MessageReceived)]
    assert got == [ShowText(text="after")]


def test_a_restarted_controller_is_not_sent_what_the_device_held_for_the_old_one() -> None:
    _old_controller, device = connected_pair()
    device.send(CardDealt(position=1, index=0, card=5), 0.1)
    device.bytes_to_send()  # lost with the old controller
    device.connection_lost("port_closed")
    drain(device)
    restarted = make_pair(77)[0]  # the daemon restarted: a new controller Link
    restarted.connect(1.0)
    exchange(restarted, device, 1.0, rounds=10)
    [up] = [event for event in drain(device) if isinstance(event, LinkUp)]
    assert [message for _, message in up.dropped] == [CardDealt(position=1, index=0, card=5)]
    device.send(CardDealt(position=1, index=1, card=6), 1.1)
    exchange(restarted, device, 1.1)
    got = [event.message for event in drain(restarted) if isinstance(event, MessageReceived)]
    assert got == [CardDealt(position=1, index=1, card=6)]


# --- negotiation -------------------------------------------------------------------------------------
def test_a_v2_controller_drives_a_v1_device_in_v1() -> None:
    controller, device = make_v1_pair()
    controller.connect(0.0)
    exchange(controller, device, 0.0)
    [up] = drain(controller)
    assert isinstance(up, LinkUp)
    assert (up.version, up.window, controller.version) == (1, 1, 1)
    assert up.hello.protocol_version == 1
    drain(device)
    with pytest.raises(LinkError, match="v2 message"):
        controller.send(StatusQuery(), 0.1)  # a v1 device would not know it
    seqs = [device.send(CardDealt(position=1, index=i, card=i), 0.1) for i in range(3)]
    assert device.bytes_to_send().count(b"\x00") == 2  # stop-and-wait: one frame in flight
    assert seqs == [1, 2, 3]


def test_a_v1_device_s_hello_is_byte_for_byte_the_v1_vector() -> None:
    """The v1 device of the v2 package answers a challenge with exactly the v1 vector's Hello."""
    vectors = build_vectors()
    challenge, hello = vectors[0], vectors[1]
    nonces = iter([VECTOR_DEVICE_NONCE])
    device = Link.device(
        VECTOR_DEVICE_ID,
        VECTOR_DEVICE_KEY,
        DeviceIdentity("shuffler", "FT-Shoe 2", "SN-000042", "2.1.0"),
        random_bytes=lambda count: next(nonces),
        versions=(1,),
    )
    device.receive_data(bytes.fromhex(challenge["frame"]), 0.0)
    assert device.bytes_to_send().hex() == hello["frame"]


def test_a_v2_controller_held_to_v1_runs_a_v2_device_in_v1() -> None:
    controller, device = make_pair(controller_versions=(1,))
    controller.connect(0.0)
    exchange(controller, device, 0.0)
    assert controller.is_up
    assert device.is_up
    assert controller.version == device.version == 1


def test_the_window_is_the_smaller_offer() -> None:
    controller = Link.controller({0x1234: bytes(range(32))}, window=8)
    device = Link.device(
        0x1234,
        bytes(range(32)),
        DeviceIdentity("shuffler", "m", "s", "1"),
        window=3,
    )
    controller.connect(0.0)
    exchange(controller, device, 0.0)
    assert controller.window == device.window == 3
