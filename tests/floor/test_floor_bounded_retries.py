"""Two bounds the floor keeps when JetStream or PostgreSQL do not answer for good (a review's findings):

- a batch's ``+WPI`` stops after its limit (controller/floor/in_progress.py), so a commit that hangs on a
  half-open database socket does not hold its batch from the worker that takes the partition over;
- a pull answered "no responders" is retried on its connection ELECTION_RETRIES times, then raised
  (controller/floor/puller.py), so a cluster without a leader for good is not retried quietly for ever.

A fake NATS client stands in for the server here, and says so: the +WPI keeper only publishes, and a
JetStream that answers every pull 503 and never answers the consumer's info (a cluster that lost two of
its three nodes) is not something a test can hold steady on real servers in seconds. The real +WPI is
run against nats-server and PostgreSQL in tests/floor/test_workers_in_progress.py."""

from __future__ import annotations

import asyncio
from typing import Any

import nats.js.errors
import pytest
from nats.aio.msg import Msg

from controller.floor import puller as puller_module
from controller.floor.in_progress import IN_PROGRESS, kept_in_progress
from controller.floor.puller import ELECTION_RETRIES, Puller

WAIT_S = 30.0  # a bound on conditions, never a window


class Publishes:
    def __init__(self) -> None:
        self.sent: list[tuple[str, bytes]] = []

    async def publish(self, subject: str, payload: bytes = b"", **_: Any) -> None:
        self.sent.append((subject, payload))


def test_a_batch_that_never_ends_stops_being_kept_in_progress_after_its_limit() -> None:
    async def scenario() -> tuple[int, bool]:
        client = Publishes()
        never = asyncio.Event()  # the commit that hangs
        async with kept_in_progress(client, ["r1", "r2"], 0.001, limit_s=0.005) as keeper:  # type: ignore[arg-type]
            done, _ = await asyncio.wait(
                [asyncio.ensure_future(keeper.ended.wait()), asyncio.ensure_future(never.wait())],
                timeout=WAIT_S,
                return_when=asyncio.FIRST_COMPLETED,
            )
            ended = keeper.ended.is_set()
            for task in done:
                task.cancel()
        assert all(payload == IN_PROGRESS for _, payload in client.sent)
        return len(client.sent), ended

    sent, ended = asyncio.run(scenario())
    assert ended, "the keeper never reached its limit"
    assert sent == 2 * 5  # five ticks of two replies, then nothing more


class LeaderlessJetStream:
    async def consumer_info(self, _stream: str, _consumer: str) -> None:
        raise TimeoutError  # unanswered: no leader to answer


class LeaderlessClient:
    """Every pull request answered with status 503 (no responders), the consumer's info never."""

    def __init__(self) -> None:
        self.puller: Puller | None = None
        self.requests = 0

    def new_inbox(self) -> str:
        return "_INBOX.test"

    def jetstream(self, timeout: float | None = None) -> LeaderlessJetStream:
        return LeaderlessJetStream()

    async def publish(self, subject: str, payload: bytes = b"", reply: str = "", headers: Any = None) -> None:
        self.requests += 1
        answer = Msg(self, subject=reply, reply="", data=b"", headers={"Status": "503"})  # type: ignore[arg-type]
        assert self.puller is not None
        asyncio.get_running_loop().call_soon(lambda: asyncio.ensure_future(self.puller._receive(answer)))  # type: ignore[union-attr]


def test_a_jetstream_without_a_leader_for_good_is_raised_after_the_election_retries(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(puller_module, "ELECTION_PAUSE_MAX_S", 0.001)  # the pauses, not what is counted

    async def scenario() -> int:
        client = LeaderlessClient()
        puller = Puller(client, "_INBOX.test")  # type: ignore[arg-type]
        client.puller = puller
        for fetches in range(1, ELECTION_RETRIES + 2):  # bounded
            try:
                assert await puller.fetch(100, 0.001) == []
            except nats.js.errors.ServiceUnavailableError:
                return fetches
        return -1

    assert asyncio.run(scenario()) == ELECTION_RETRIES + 1


class DeletedWhileCheckedClient:
    """The pull unanswered (nothing at all: no leader, or a consumer already gone), and while the
    puller's check of the consumer is waiting, the server's 409 "Consumer Deleted" reaches the pull's
    reply subject; the check itself then goes unanswered."""

    def __init__(self) -> None:
        self.puller: Puller | None = None
        self.reply = ""

    def new_inbox(self) -> str:
        return "_INBOX.test"

    def jetstream(self, timeout: float | None = None) -> DeletedWhileCheckedClient:
        return self

    async def publish(self, subject: str, payload: bytes = b"", reply: str = "", headers: Any = None) -> None:
        self.reply = reply  # no answer

    async def consumer_info(self, _stream: str, _consumer: str) -> None:
        assert self.puller is not None
        deleted = Msg(self, subject=self.reply, reply="", data=b"",  # type: ignore[arg-type]
                      headers={"Status": "409", "Description": "Consumer Deleted"})  # fmt: skip
        await self.puller._receive(deleted)
        raise TimeoutError  # the check unanswered


def test_a_consumer_deleted_heard_during_the_check_is_raised_not_taken_for_an_election() -> None:
    """An error status heard while the consumer's check waits is news, as everywhere else in the puller
    (its class's doc: "a deleted consumer is news however it is heard"). Before (review R3), the check
    unanswered replaced it with the election's 503, and the fetch returned an empty batch to be retried
    up to ELECTION_RETRIES times (``assert [] ...``, no raise)."""

    async def scenario() -> None:
        client = DeletedWhileCheckedClient()
        puller = Puller(client, "_INBOX.test")  # type: ignore[arg-type]
        client.puller = puller
        with pytest.raises(nats.js.errors.APIError) as raised:
            await puller.fetch(100, 0.001)
        assert raised.value.code == 409
        assert not isinstance(raised.value, nats.js.errors.ServiceUnavailableError)

    asyncio.run(scenario())
