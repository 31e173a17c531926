"""The Puller's retry cycle while its consumer has no leader (controller/floor/puller.py ``fetch``;
docs/floor.md "Tenth stop"): a pull and the consumer's info that go unanswered are asked again on the
same connection, and the info's own wait (CONSUMER_CHECK_TIMEOUT_S) is the only wait between retries.
Before, a pause doubling up to 1 s came after that wait too, so once the consumer's new leader was there
the next pull followed 0.95-1.72 s later in the bench's runs. Real nats-server, made silent with SIGSTOP
(its sockets open: every request unanswered, as a consumer's leader being elected leaves them); the
pauses the Puller takes are recorded, not timed."""

from __future__ import annotations

import asyncio
import signal

from controller.floor.puller import Puller
from controller.uplink.wire import FLOOR_INBOX
from tests.floor.conftest import MakeFloor
from tests.floor.helpers import table_ids

# Retries made while the server is silent: enough for the old pauses to have doubled to their 1 s cap.
SILENT_RETRIES = 3
MAX_WAIT_S = 0.5  # the fetch's own wait (the floor's default is 0.05 s; longer here: the old pauses' start)


def test_no_pause_follows_a_consumer_check_that_went_unanswered(make_floor: MakeFloor) -> None:
    """Three fetches while the server is stopped: each pull and consumer check unanswered, each fetch an
    empty batch (retried, the connection kept), and no pause taken after any of them. Then the server
    goes on and the next fetch is answered. Before: pauses of 0.5, 1.0 and 1.0 s (``assert [0.5, 1.0,
    1.0] == [0.0, 0.0, 0.0]``)."""
    floor = make_floor(table_ids(1))
    assert floor.nats is not None
    assert floor.nats.process is not None
    server = floor.nats.process

    async def scenario() -> list[float]:
        config = floor.floor_config()
        client = await floor.connect_as(config.user, config.password, inbox_prefix=FLOOR_INBOX)
        pauses: list[float] = []

        async def recorded(pause_s: float) -> None:
            pauses.append(pause_s)

        try:
            puller = await Puller.start(client)
            puller.pause = recorded
            assert await puller.fetch(10, MAX_WAIT_S) == []  # the consumer there, nothing to deliver
            assert pauses == []
            server.send_signal(signal.SIGSTOP)
            try:
                for _ in range(SILENT_RETRIES):
                    assert await puller.fetch(10, MAX_WAIT_S) == []  # retried: raised would end it
            finally:
                server.send_signal(signal.SIGCONT)
            silent_pauses = list(pauses)
            # Answered again: an empty batch with no error and no pause, the retries' count reset.
            answered = False
            for _ in range(10):  # bounded: a retry may still be under way as the server goes on
                assert await puller.fetch(10, MAX_WAIT_S) == []
                if len(pauses) == len(silent_pauses):
                    answered = True
                    break
                silent_pauses = list(pauses)
            assert answered
            return silent_pauses
        finally:
            await client.close()

    assert asyncio.run(scenario()) == [0.0] * SILENT_RETRIES
