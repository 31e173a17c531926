"""The floor's pull of its durable consumer (docs/floor.md "The floor service"): batches requested from
the consumer's ``MSG.NEXT`` subject and delivered to an inbox of the floor's own, and the pull statuses
JetStream answers with. The NATS side only: what is done with a batch is controller/floor/service.py's.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable

import nats.js.errors
import structlog
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.js.client import JetStreamContext

from controller.floor.intake import Delivery, FloorClient, stream_seq_of_reply
from controller.uplink.wire import FLOOR_CONSUMER, STREAM_NAME
from controller.waits import wait_event

log = structlog.get_logger("flushtable.floor")
# How long the check that the consumer is still there waits for JetStream's answer (``Puller``). During a
# consumer's election it is the retry cycle's wait: a request sent before the new leader is never
# answered, so the pull after the election follows within about this (docs/floor.md "Tenth stop": at
# 1 s, with the pauses below after it, the first pull came 0.95-1.72 s after the new leader).
CONSUMER_CHECK_TIMEOUT_S = 0.5
# A consumer's leader election after a node's loss takes 4-9 s (docs/floor.md "Measured: workers on the
# cluster"): pulls answered "no responders" (or unanswered, the consumer's info too) are retried on the
# same connection this many times (each retry's consumer check up to CONSUMER_CHECK_TIMEOUT_S, and a
# pause doubling from one request's wait to 1 s when the cluster answered at once: 20 s and more in
# all), then the error is raised and the service reconnects with its backoff and says so
# (`floor_retry`): JetStream without a leader for good (a cluster that lost its majority) is not retried
# quietly for ever.
ELECTION_RETRIES = 40
ELECTION_PAUSE_MAX_S = 1.0

__all__ = ["ACK", "NAK", "Puller", "pull_status_error"]

# JetStream's acknowledgements, as nats-py's Msg.ack() and nak() send them to a delivery's reply subject.
ACK = b""
NAK = b"-NAK"


# 409s that end a pull request and not the pulling (the next request may be answered): JetStream's
# pull semantics, as the NATS clients read them. Any other 409 (Consumer Deleted, Consumer is push based)
# and any status but 100/404/408 (400 bad request, 503 no responders: no consumer) is an error.
_PASSING_CONFLICTS = (
    "request timeout",
    "exceeded maxwaiting",
    "exceeded maxrequestbatch",
    "exceeded maxrequestexpires",
    "exceeded maxrequestmaxbytes",
    "message size exceeds maxbytes",
    "leadership change",
    "server shutdown",
)


def pull_status_error(status: str, description: str) -> nats.js.errors.APIError | None:
    """The error a pull request's status message means, or None: 100 is a heartbeat, 404 (no messages)
    and 408 (request expired) end the request, and so do the passing 409s above; every other status
    (409 Consumer Deleted, 400, 503 no responders ...) is raised, so that the service's loop logs
    ``floor_retry`` and reconnects instead of pulling empty batches forever with nothing said."""
    if status in ("100", "404", "408"):
        return None
    if status == "409" and description.strip().lower().startswith(_PASSING_CONFLICTS):
        return None
    if status == "503":
        return nats.js.errors.ServiceUnavailableError(code=503, description=description or "no responders")
    return nats.js.errors.APIError(code=int(status) if status.isdigit() else None, description=description)


class Puller:
    """The durable consumer's batches, pulled as nats-py's ``fetch`` pulls them (a request to the
    consumer's ``MSG.NEXT`` subject, the messages delivered to an inbox of the floor's own), without its
    task and timer per message: at thousands of messages a second those cost the floor more than its
    own checks of each message do.

    A request is for up to ``batch`` messages (within ``max_ack_pending``); it ends with the server's
    status (nothing more now, or expired) or when the batch is full. A message that arrives after its
    request was answered (it was already under way) is kept for the next batch: every message
    delivered is handed over, and so acked or nak'd, once.

    Each request has a reply subject of its own (``<inbox>.<n>``), on which the server sends its
    statuses, so a late status of an earlier request (a 408 sent at its expiry, after this side had
    stopped waiting: a loaded machine) is told from the current request's: it neither ends the current
    request nor counts as its answer, which would hide a consumer gone meanwhile
    (``_consumer_is_there``). An error status ends the pulling whichever request it answers: a deleted
    consumer is news however it is heard."""

    def __init__(self, client: Client, inbox: str, consumer: str = FLOOR_CONSUMER) -> None:
        self._client = client
        self._inbox = inbox
        self._consumer = consumer
        self._messages: list[Delivery] = []
        self._wanted = 0
        self._ended = asyncio.Event()
        self._error: nats.js.errors.APIError | None = None  # a status that ends pulling (raised by fetch)
        self._requests = 0  # requests sent; the n-th is answered on <inbox>.<n>
        self._reply = ""  # the current request's reply subject
        self._answered = False  # the current request had a reply: a message or a status
        self._unavailable = 0  # pulls answered "no responders" in a row (a leader being elected)
        # How a retry's pause is taken (``fetch``): asyncio.sleep; a test's records.
        self.pause: Callable[[float], Awaitable[None]] = asyncio.sleep

    @classmethod
    async def start(cls, client: Client, consumer: str = FLOOR_CONSUMER) -> Puller:
        puller = cls(client, client.new_inbox(), consumer)
        subscription = await client.subscribe(f"{puller._inbox}.*", cb=puller._receive)
        if isinstance(client, FloorClient):  # deliveries with a body come raw (controller/floor/intake.py)
            client.deliver_raw(subscription._id, puller._delivered)
        return puller

    def _delivered(self, delivery: Delivery) -> None:
        # A delivery carries its stream subject, not the reply subject: it answers some request.
        self._answered = True
        self._messages.append(delivery)
        if len(self._messages) >= self._wanted:
            self._ended.set()

    async def _receive(self, message: Msg) -> None:
        status = JetStreamContext.is_status_msg(message) if not message.data else None
        if status is None:
            try:
                stream_seq = stream_seq_of_reply(message.reply)
            except ValueError as not_a_delivery:
                # Not a JetStream delivery (published to the floor's inbox by someone else): nothing to
                # ack, and no batch may hold it. The pulling ends with the error; the service reconnects.
                self._error = nats.js.errors.APIError(description=str(not_a_delivery))
                self._ended.set()
                return
            self._delivered(
                Delivery(stream_seq, message.subject, message.headers or {}, message.data, message.reply)
            )
            return
        current = message.subject == self._reply  # a status comes on its request's reply subject
        if current:
            self._answered = True
        error = pull_status_error(status, (message.headers or {}).get("Description", ""))
        if error is not None:
            self._error = error
            self._ended.set()
        elif current and status != "100":  # 404 nothing now, 408 expired, a passing 409: it is over
            self._ended.set()

    async def fetch(self, batch: int, max_wait_s: float) -> list[Delivery]:
        # First what is there now (``no_wait``: the server answers at once); only if nothing is, a
        # request that waits up to ``max_wait_s`` and is taken at its first message: a busy floor's
        # batches are whatever came while the last one was written, a quiet floor's lag its first
        # message's (what the waiting request still delivers is kept for the next batch).
        checked = False  # the consumer's info asked by this fetch already
        waited = False  # and its answer waited for until CONSUMER_CHECK_TIMEOUT_S: the retry's pause
        if len(self._messages) < batch:
            await self._request(batch, {"no_wait": True}, max_wait_s, wanted=batch)
            checked = not self._answered and self._error is None
            # An error status heard meanwhile (a 409 Consumer Deleted) is kept: news, not an election.
            if checked and not (there := await self._consumer_is_there()) and self._error is None:
                # Neither the pull nor the consumer's info answered: a leader being elected, retried
                # as the pull's own 503 is (bounded by ELECTION_RETRIES), on this connection.
                self._error = nats.js.errors.ServiceUnavailableError(code=503, description="unanswered")
                waited = there is None
        if not self._messages and self._error is None:
            # At least 1 ns: an expiry of 0 means "never" to JetStream, and such requests would pile up.
            expires_ns = max(1, round(max_wait_s * 1e9))
            await self._request(batch, {"expires": expires_ns}, max_wait_s, wanted=1)
        if self._error is not None:
            # The messages delivered before it are not handed over: unacked, the consumer redelivers them.
            error, self._error = self._error, None
            electing = isinstance(error, nats.js.errors.ServiceUnavailableError)
            if electing and self._unavailable < ELECTION_RETRIES:
                if not checked:
                    waited = await self._consumer_is_there() is None  # raises if the consumer is gone
                # No responders while the consumer is there (or its info unanswered): its leader is
                # being elected after a node's loss. Pulled again on this connection after a pause;
                # ending the connection for it (reconnecting, backing off) held a partition's commits
                # for seconds after its leader's node was killed. Bounded: ELECTION_RETRIES.
                # No pause after a consumer's info that went unanswered: its wait spaced the retries
                # already, and a pause after it only delayed the first pull after the new leader (the
                # pauses, doubling to 1 s, added up to 1 s to each cycle). Answered at once (503: no
                # leader, known), the pause keeps the retries from spinning.
                pause_s = 0.0 if waited else min(max_wait_s * 2**self._unavailable, ELECTION_PAUSE_MAX_S)
                self._unavailable += 1
                log.info("floor_pull_unavailable", consumer=self._consumer, retry=self._unavailable,
                         pause_s=round(pause_s, 3))  # fmt: skip
                await self.pause(pause_s)  # a retry's pause, not a wait for anything
                return []
            self._unavailable = 0
            raise error
        self._unavailable = 0
        messages, self._messages = self._messages[:batch], self._messages[batch:]
        return messages

    async def _consumer_is_there(self) -> bool | None:
        """Raises nats.js.errors.NotFoundError when the consumer is gone; True when it answered; False
        when answered 503 (the cluster's metadata without a leader), None when unanswered within
        CONSUMER_CHECK_TIMEOUT_S (both: no leader answered; None: its wait was spent). A ``no_wait``
        request is answered at once by a consumer that exists (its messages, or 404); unanswered, it may
        have gone nowhere: a consumer deleted while no request of ours was waiting is told to nobody (the 409
        Consumer Deleted goes to waiting requests only), and nats-server 2.9 answers a request to a
        missing consumer with silence, not 503 (the account's ``$JS.API.>`` import has interest in
        every subject under it). Asked here, where the API's answer is certain.

        Unanswered within CONSUMER_CHECK_TIMEOUT_S (a consumer's leader being elected after a node's
        loss: the pull request went unanswered for the same reason), the next pull asks again on the
        same connection: a timeout here used to end the connection after nats-py's 5 s, and the
        reconnection's first check could wait 5 s more (controller/floor/workers.py's measurements)."""
        try:
            await self._client.jetstream(timeout=CONSUMER_CHECK_TIMEOUT_S).consumer_info(
                STREAM_NAME, self._consumer
            )
        except (TimeoutError, nats.js.errors.ServiceUnavailableError) as error:
            # A 503 raised here ended the connection: with the cluster's majority lost, a survivor that
            # still led the stream answered the stream's info at once and the consumer's with 503, and
            # the service reconnected (its backoff reset by each good connection) about five times a
            # second for as long as the majority stayed lost.
            log.info("floor_consumer_check_unanswered", consumer=self._consumer, error=type(error).__name__)
            return None if isinstance(error, TimeoutError) else False
        return True

    async def _request(
        self, batch: int, options: dict[str, object], max_wait_s: float, *, wanted: int
    ) -> None:
        self._wanted = wanted
        self._requests += 1
        self._reply = f"{self._inbox}.{self._requests}"
        self._answered = False
        self._ended.clear()
        request = {"batch": batch - len(self._messages), **options}
        await self._client.publish(
            f"$JS.API.CONSUMER.MSG.NEXT.{STREAM_NAME}.{self._consumer}",
            json.dumps(request).encode(),
            reply=self._reply,
        )
        # The request's end is the server's status, or its expiry: the server does not always say so
        # when some messages came (waiting for it held a batch up to the second), and whatever it
        # still sends is kept for the next batch.
        await wait_event(self._ended, max_wait_s + 0.02)
