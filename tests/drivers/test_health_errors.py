"""A device's error count (DeviceHealth.errors, the panel's "Errors") counts real errors only: an ACK
that crossed a retransmission is the protocol working (docs/protocol.md 6), not an error (issue 24)."""

from __future__ import annotations

from drivers.supervisor import link_errors
from firmware_protocol import Heartbeat
from tests.protocol.helpers import connected_pair, drain


def test_a_stale_ack_is_not_an_error_but_a_damaged_frame_is() -> None:
    controller, device = connected_pair()
    controller.send(Heartbeat(uptime_ms=1), 0.0)
    device.receive_data(controller.bytes_to_send(), 0.0)
    ack = device.bytes_to_send()
    controller.receive_data(ack, 0.0)
    controller.receive_data(ack, 0.0)  # the same ACK again: crossed with a retransmission
    drain(controller)
    assert controller.stats.refused == {"stale_ack": 1}
    assert link_errors(controller.stats.refused) == 0
    damaged = bytearray(ack)
    damaged[len(damaged) // 2] ^= 0x40  # one bit flipped on the line
    controller.receive_data(bytes(damaged), 0.0)
    assert link_errors(controller.stats.refused) == 1
