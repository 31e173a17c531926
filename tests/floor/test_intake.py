"""The floor's raw deliveries (controller/floor/intake.py) and its one JSON reader (wire.decode) read
what nats-py and json.loads read: the same headers, the same stream sequence, the same documents and
the same refusals, on ordinary and odd inputs alike; a batch's acks and ``+WPI`` sent as one command,
and a partition's service asking a subject's partition once. Pure, but for the acks and ``+WPI``, sent
to a real nats-server."""

from __future__ import annotations

import asyncio
import codecs
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import nats.js.errors
import pytest
from nats import errors as nats_errors
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.protocol import parser as nats_parser

from controller.floor.in_progress import IN_PROGRESS, kept_in_progress
from controller.floor.intake import Delivery, FloorClient, RawHeaders, stream_seq_of_reply
from controller.floor.puller import Puller
from controller.floor.service import FloorService
from controller.floor.service_settings import FloorConfig
from controller.tls import ssl_context
from controller.uplink import wire
from tests.floor.conftest import MakeFloor
from tests.floor.helpers import ANSWER_TIMEOUT_S

HEADER_BLOCKS = [
    b"NATS/1.0\r\nNats-Msg-Id: T1:3:abc\r\nFlushtable-Pos: 3.0\r\n\r\n",
    b"NATS/1.0\r\nNats-Stream-Source: FLUSHTABLE_east:hash 12\r\n\r\n",
    b"NATS/1.0\r\nName:Value\r\nNo colon here\r\nBad Name: x\r\n\xff\xfe: y\r\nK: caf\xc3\xa9 \xff\r\n\r\n",
    b"NATS/1.0\r\n\r\n",
    b"NATS/1.0\r\nNats-Stream-Sourcex: 1\r\nA: 1\r\nA: 2\r\n\r\n",
]


@pytest.mark.parametrize("block", HEADER_BLOCKS)
def test_raw_headers_read_as_nats_py_reads_them(block: bytes) -> None:
    expected = Client._parse_header_lines(block[len(b"NATS/1.0\r\n") :])
    headers = RawHeaders(block)
    assert dict(headers) == expected
    for name in ("Nats-Stream-Source", "Nats-Msg-Id", "Name", "K", "A", "absent"):
        assert RawHeaders(block).get(name) == expected.get(name)
        assert RawHeaders(block).get(name, "d") == expected.get(name, "d")
    # Compared as the mapping it is, both ways (a struct's own != answered True beside == True).
    assert headers == expected
    assert not headers != expected  # noqa: SIM202  (the != operator itself is what is checked)
    assert headers != {**expected, "other": "x"}


def test_a_header_the_block_does_not_hold_is_answered_without_parsing() -> None:
    headers = RawHeaders(HEADER_BLOCKS[0])
    assert headers.get("Nats-Stream-Source") is None
    assert headers._parsed is None  # the common case of every message: nothing parsed
    assert headers.get("Nats-Msg-Id") == "T1:3:abc"
    assert headers._parsed is not None


@pytest.mark.parametrize(
    "reply",
    [
        "$JS.ACK.FLUSHTABLE.floor.1.12345.99.1764912345123456789.5",
        "$JS.ACK.hub.ACCHASH.FLUSHTABLE.floor.2.777.98.1764912345123456789.0.token",
        "$JS.ACK.hub.ACCHASH.FLUSHTABLE.floor.2.778.98.1764912345123456789.0",
    ],
)
def test_the_stream_seq_is_nats_py_s(reply: str) -> None:
    assert stream_seq_of_reply(reply) == Msg.Metadata._from_reply(reply).sequence.stream


@pytest.mark.parametrize(
    "reply",
    [
        "",
        "_INBOX.x.1",
        "$JS.ACK.a.b.c.d.e.f.g.h",
        "$JS.NAK.FLUSHTABLE.floor.1.2.3.4.5",
        "$JS.ACK.S.c.1.x.2.3.4",
    ],
)
def test_what_is_no_jetstream_delivery_is_refused(reply: str) -> None:
    with pytest.raises(ValueError):  # noqa: PT011 - the one error it raises
        stream_seq_of_reply(reply)


def _outcome(read: Any, data: bytes) -> tuple[str, Any]:
    try:
        return "ok", read(data)
    except (ValueError, RecursionError) as error:
        return "refused", type(error).__name__


BODIES = [
    b'{"a": 1, "b": [1.5, "x"], "a": 2}',
    codecs.BOM_UTF8 + b'{"a": 1}',
    '{"a": "é"}'.encode("utf-16"),
    b'{"a": "\\ud800"}',
    b'{"a": "\xed\xa0\x80"}',  # a surrogate encoded in UTF-8: json.loads takes it ("surrogatepass")
    b'{"a": NaN}',
    b'{"a": 1e400}',
    b"",
    b"\xff\xfe{}",
    b'{"a": 123456789012345678901234567890}',
    b"[1, 2",
]


@pytest.mark.parametrize("body", BODIES)
def test_the_one_reader_reads_as_json_loads(body: bytes) -> None:
    assert _outcome(wire._json_document, body) == _outcome(
        lambda data: json.loads(data, parse_constant=wire._not_json), body
    )


def test_publish_empty_sends_what_publish_sends_for_each(make_floor: MakeFloor) -> None:
    """The batch's acks as one command (FloorClient.publish_empty) against a real nats-server: each
    subject gets one empty message, in order, as ``publish(subject, b"")`` each would send; an empty
    subject is refused with nothing sent."""
    floor = make_floor(["T1"])

    async def run() -> list[tuple[str, bytes]]:
        admin = await floor.connect_admin()
        assert floor.tls is not None
        sender = FloorClient()
        await sender.connect(
            servers=list(floor.nats_urls),
            user="floor-admin",
            password=floor._password("nats:admin"),
            tls=ssl_context(floor.tls.ca_cert),
            allow_reconnect=False,
            connect_timeout=5,
        )
        try:
            got: list[tuple[str, bytes]] = []
            subscription = await admin.subscribe("acks.>")
            await admin.flush()
            with pytest.raises(nats_errors.BadSubjectError):
                await sender.publish_empty(["acks.x", ""])
            await sender.publish_empty([f"acks.{n}" for n in range(300)])
            await sender.publish("acks.last", b"")
            await sender.flush()
            for _ in range(301):
                message = await subscription.next_msg(timeout=ANSWER_TIMEOUT_S)
                got.append((message.subject, message.data))
            assert sender.stats["out_msgs"] == 301
            return got
        finally:
            await sender.close()
            await admin.close()

    got = asyncio.run(run())
    assert got == [(f"acks.{n}", b"") for n in range(300)] + [("acks.last", b"")]


class CountingFloorClient(FloorClient):
    """The floor's client, counting the commands it queues (each a ``publish`` before batching)."""

    def __init__(self) -> None:
        super().__init__()
        self.commands = 0

    async def _send_command(self, cmd: bytes, priority: bool = False) -> None:
        self.commands += 1
        await super()._send_command(cmd, priority)


def test_a_batch_kept_in_progress_sends_its_wpi_as_one_command(make_floor: MakeFloor) -> None:
    """A batch's ``+WPI`` (controller/floor/in_progress.py) through the floor's own client, against a
    real nats-server: each reply subject gets ``+WPI`` once a tick, in order, as ``publish`` each would
    send it, queued as one command a tick. Before, one ``publish`` each (``assert 300 == 1``)."""
    floor = make_floor(["T1"])

    async def run() -> tuple[list[tuple[str, bytes]], int]:
        admin = await floor.connect_admin()
        assert floor.tls is not None
        sender = CountingFloorClient()
        await sender.connect(
            servers=list(floor.nats_urls),
            user="floor-admin",
            password=floor._password("nats:admin"),
            tls=ssl_context(floor.tls.ca_cert),
            allow_reconnect=False,
            connect_timeout=5,
        )
        try:
            subscription = await admin.subscribe("replies.>")
            await admin.flush()
            replies = [f"replies.{n}" for n in range(300)]
            before = sender.commands
            # One tick (its limit one interval): the block waits for the keeper to end by its limit.
            async with kept_in_progress(sender, replies, 0.001, limit_s=0.001) as keeper:
                await asyncio.wait_for(keeper.ended.wait(), ANSWER_TIMEOUT_S)
            commands = sender.commands - before
            await sender.flush()
            got = []
            for _ in replies:
                message = await subscription.next_msg(timeout=ANSWER_TIMEOUT_S)
                got.append((message.subject, message.data))
            return got, commands
        finally:
            await sender.close()
            await admin.close()

    got, commands = asyncio.run(run())
    assert commands == 1
    assert got == [(f"replies.{n}", IN_PROGRESS) for n in range(300)]


def test_a_partitions_service_asks_owns_once_a_subject() -> None:
    """A partition's service remembers which subjects are its own (``FloorService._is_mine``): the
    table's partition asked once a subject, the answers those of ``owns``. Before, once a message
    (``assert 4 == 2``)."""
    asked: list[str] = []

    def owns(table_id: str) -> bool:
        asked.append(table_id)
        return table_id == "T1"

    config = FloorConfig(("tls://127.0.0.1:4222",), "floor-reader", "pw", Path("ca.pem"), "dbname=floor")
    service = FloorService(config, owns=owns)
    subjects = [wire.stored_subject("main", "T1"), wire.stored_subject("main", "T2")]
    answers = [service._is_mine(subject) for subject in subjects * 2]
    assert answers == [True, False, True, False]
    assert len(asked) == 2
    assert asked == ["T1", "T2"]


def test_a_message_on_the_floors_inbox_that_is_no_delivery_ends_the_pull_not_in_a_batch(
    make_floor: MakeFloor,
) -> None:
    """A message published to the floor's pull inbox by someone else (no JetStream ack subject) is never
    handed over in a batch: the delivery's stream sequence is read at the intake, and such a message ends
    the pulling with an error (the service reconnects), as a delivery the stream sequence cannot be read
    from. Before, it was handed over, and the batch holding it raised ValueError in the service (fails
    there: a fetch returned it)."""
    floor = make_floor(["T1"])

    async def run() -> None:
        config = floor.floor_config()
        admin = await floor.connect_admin()
        assert floor.tls is not None
        client = FloorClient()
        await client.connect(
            servers=list(floor.nats_urls),
            user=config.user,
            password=config.password,
            tls=ssl_context(floor.tls.ca_cert),
            inbox_prefix=wire.FLOOR_INBOX,
            allow_reconnect=False,
            connect_timeout=5,
        )
        try:
            puller = await Puller.start(client)
            await client.flush(int(ANSWER_TIMEOUT_S))

            async def pulls() -> None:
                # Sent again before each pull: on a cluster the admin's node may learn of the inbox's
                # subscription after the first is sent (nobody to deliver it to then). Bounded; the
                # callback runs in the subscription's own task.
                for _ in range(50):
                    await admin.publish(f"{puller._inbox}.1", b'{"not": "a delivery"}')
                    await admin.flush(int(ANSWER_TIMEOUT_S))
                    batch = await puller.fetch(10, 0.1)
                    assert batch == [], f"a batch held it: {batch}"

            with pytest.raises(nats.js.errors.APIError, match="not a JetStream delivery"):
                await pulls()
        finally:
            await client.close()
            await admin.close()

    asyncio.run(run())


# The floor's raw subscription and another one, as the parser tests number them.
_RAW_SID = 7
_OTHER_SID = 9


def _hmsg(subject: bytes, sid: int, reply: bytes, headers: bytes, body: bytes, *, gap: bytes = b" ") -> bytes:
    sizes = gap.join([str(len(headers)).encode(), str(len(headers) + len(body)).encode()])
    fields = gap.join(
        [subject, str(sid).encode(), reply, sizes] if reply else [subject, str(sid).encode(), sizes]
    )
    return b"HMSG " + fields + b"\r\n" + headers + body + b"\r\n"


def _ack_reply(stream_seq: int) -> bytes:
    return f"$JS.ACK.FLUSHTABLE.floor.1.{stream_seq}.{stream_seq}.1764912345123456789.0".encode()


def _deliveries(count: int, first_seq: int) -> bytes:
    # Bodies that hold what a control line holds (a line break, "HMSG "): a payload is never scanned.
    return b"".join(
        _hmsg(
            f"flushtable.T{seq % 5}.journal".encode(),
            _RAW_SID,
            _ack_reply(seq),
            f"NATS/1.0\r\nNats-Msg-Id: T{seq % 5}:{seq}:h\r\n\r\n".encode(),
            b'{"seq":%d,"x":"HMSG a 7 b 1 2\r\nPING\r\n' % seq + b"y" * (seq * 37 % 300) + b'"}',
        )
        for seq in range(first_seq, first_seq + count)
    )


# nats-server's wire as the floor's client meets it: runs of the raw subscription's deliveries, and
# between them everything nats-py must read as before (statuses, PING, PONG, +OK, INFO, -ERR, another
# subscription's messages, a delivery without headers, one spelled with two spaces, one whose reply is
# no JetStream ack subject, one without a body, one with an inline status).
_WIRE = b"".join(
    [
        _deliveries(12, 1),
        _hmsg(b"_INBOX.f.1", _RAW_SID, b"", b"NATS/1.0 404 No Messages\r\n\r\n", b""),
        b"PING\r\n",
        _deliveries(3, 13),
        b"MSG other.subject 9 5\r\nhello\r\n",
        _hmsg(b"other.subject", _OTHER_SID, _ack_reply(99), b"NATS/1.0\r\nA: 1\r\n\r\n", b"other's"),
        b"+OK\r\nPONG\r\n",
        _hmsg(
            b"flushtable.T1.journal", _RAW_SID, _ack_reply(16), b"NATS/1.0\r\nB: 2\r\n\r\n", b"{}", gap=b"  "
        ),
        b"MSG flushtable.T2.journal 7 " + _ack_reply(17) + b" 2\r\n{}\r\n",
        _hmsg(b"flushtable.T3.journal", _RAW_SID, b"_INBOX.not.an.ack", b"NATS/1.0\r\nC: 3\r\n\r\n", b"{}"),
        _hmsg(b"flushtable.T4.journal", _RAW_SID, _ack_reply(18), b"NATS/1.0\r\nD: 4\r\n\r\n", b""),
        b'INFO {"server_id":"x","max_payload":1048576}\r\n',
        _deliveries(2, 900),  # a run that ends at an inline status with a body: nats-py's way, as before
        _hmsg(b"flushtable.T0.journal", _RAW_SID, _ack_reply(902), b"NATS/1.0 100 Idle\r\n\r\n", b"{}"),
        _deliveries(20, 19),
        _hmsg(b"_INBOX.f.2", _RAW_SID, b"", b"NATS/1.0 408 Request Timeout\r\n\r\n", b""),
        b"-ERR 'Unknown Protocol Operation'\r\n",
        _deliveries(4, 39),
    ]
)


class _Recording(FloorClient):
    """The floor's client with what reaches it written down in order: each raw delivery, each message
    nats-py's way (``_process_msg`` past the raw path), each PING, PONG, INFO and -ERR. With
    ``nats_py_parser`` its protocol is read by nats-py's own parser (the reference)."""

    def __init__(self, *, nats_py_parser: bool) -> None:
        super().__init__()
        if nats_py_parser:
            self._ps = nats_parser.Parser(self)
        self.seen: list[tuple[Any, ...]] = []
        self.process_msg_calls = 0
        self.deliver_raw(_RAW_SID, self._raw)

    def _raw(self, delivery: Delivery) -> None:
        self.seen.append(("raw", delivery.stream_seq, delivery.subject, dict(delivery.headers),
                          delivery.data, delivery.reply))  # fmt: skip

    async def _process_msg(
        self, sid: int, subject: bytes, reply: bytes, data: bytes, headers: bytes | None
    ) -> None:
        self.process_msg_calls += 1
        if not self._raw_delivery(sid, subject, reply, data, headers):
            self.seen.append(("nats-py", sid, bytes(subject), bytes(reply), data, headers))

    async def _process_ping(self) -> None:
        self.seen.append(("ping",))

    async def _process_pong(self) -> None:
        self.seen.append(("pong",))

    async def _process_info(self, info: dict[str, Any], initial_connection: bool = False) -> None:
        self.seen.append(("info", info))

    async def _process_err(self, err_msg: str) -> None:
        self.seen.append(("err", err_msg))


async def _read(client: _Recording, chunks: list[bytes]) -> list[tuple[Any, ...]]:
    for chunk in chunks:
        await client._ps.parse(chunk)
    return client.seen


def test_the_floor_parser_reads_the_wire_as_nats_py_reads_it_however_it_is_cut() -> None:
    """The floor's parser (controller/floor/intake.py ``_FloorParser``) hands over what nats-py's parser
    and ``_process_msg`` hand over, in the same order, whatever reads the wire is cut into: whole, at
    every byte, at each of its first 400 offsets in two, and in chunks of 2-97 bytes."""

    async def run() -> None:
        reference = await _read(_Recording(nats_py_parser=True), [_WIRE])
        kinds = [event[0] for event in reference]
        assert kinds.count("raw") == 12 + 3 + 1 + 2 + 20 + 4 + 1  # and the one spelled with two spaces
        assert {"nats-py", "ping", "pong", "info", "err"} <= set(kinds)
        cuts: list[list[bytes]] = [[_WIRE], [_WIRE[at : at + 1] for at in range(len(_WIRE))]]
        cuts += [[_WIRE[:at], _WIRE[at:]] for at in range(1, 400)]
        cuts += [[_WIRE[at : at + size] for at in range(0, len(_WIRE), size)] for size in range(2, 98)]
        for chunks in cuts:
            assert await _read(_Recording(nats_py_parser=False), chunks) == reference, len(chunks)

    asyncio.run(run())


def test_a_run_of_raw_deliveries_is_read_without_a_coroutine_each() -> None:
    """The floor's deliveries arrive in runs: read off the buffer at once and handed over in order,
    none through nats-py's ``_process_msg`` (a coroutine a message, awaited by its parser for each);
    before, each was."""

    async def run() -> None:
        client = _Recording(nats_py_parser=False)
        await _read(client, [_deliveries(500, 1)])
        assert [event[1] for event in client.seen] == list(range(1, 501))
        assert client.process_msg_calls == 0
        assert client._ps.buf == b""

    asyncio.run(run())


def test_a_delivery_cut_between_reads_is_read_without_a_coroutine() -> None:
    """A read of the socket ends inside a delivery about once a read (nats-py reads 32 KiB at a time):
    the delivery's rest is waited for and the whole handed over raw with the next run, as nats-py's parser
    waits for a payload, not through nats-py's parser and ``_process_msg``. Before, each cut delivery
    went that way (``assert 31 == 0``: a coroutine and two regular expressions for one message a read)."""

    async def run() -> None:
        wire = _deliveries(500, 1)
        client = _Recording(nats_py_parser=False)
        await _read(client, [wire[at : at + 4096] for at in range(0, len(wire), 4096)])
        assert [event[1] for event in client.seen] == list(range(1, 501))
        assert client.process_msg_calls == 0
        assert client._ps.buf == b""

    asyncio.run(run())


def test_a_large_delivery_is_waited_for_without_reading_the_buffer_again_each_read() -> None:
    """A delivery of a megabyte (a table may publish up to the server's max_payload) arriving in nats-py's
    32 KiB reads: handed over raw once whole, and the buffer read for a run twice (when its line came,
    when its last byte came), not once a read: each read copies the buffer whole, so reading it again for
    each of the 33 reads copied 17 MB for one message. On main the delivery went through nats-py's parser
    (``assert 1 == 0``, its ``_process_msg``); waited for with a run each read, ``assert 33 <= 2``."""

    async def run() -> None:
        body = b'{"x":"' + b"y" * (1 << 20) + b'"}'
        wire = _hmsg(b"flushtable.T1.journal", _RAW_SID, _ack_reply(1), b"NATS/1.0\r\nA: 1\r\n\r\n", body)
        wire += _deliveries(2, 2)
        client = _Recording(nats_py_parser=False)
        runs: list[int] = []
        parser: Any = client._ps  # the floor's parser (``FloorClient`` installs it)
        raw_run = parser._raw_run

        def counted() -> Any:
            runs.append(len(parser.buf))
            return raw_run()

        parser._raw_run = counted
        await _read(client, [wire[at : at + 32768] for at in range(0, len(wire), 32768)])
        assert [event[1] for event in client.seen] == [1, 2, 3]
        assert client.seen[0][4] == body
        assert client.process_msg_calls == 0
        assert len(runs) <= 2

    asyncio.run(run())


# Far above what the child needs to start and read one line, even on a loaded machine; only a spinning
# parser (the defect below) reaches it, and the child is then killed.
SPIN_BOUND_S = 120.0

_LONG_UNKNOWN_LINE_CHILD = """
import asyncio
from nats.errors import ProtocolError
from controller.floor.intake import FloorClient

async def main() -> None:
    client = FloorClient()
    try:
        await client._ps.parse(b"HMSG " + b"x" * 5000 + b"\\r\\nPING\\r\\n")
    except ProtocolError as error:
        print("raised:", error)
    else:
        print("read")

asyncio.run(main())
"""


def test_a_long_line_nats_py_cannot_read_ends_the_reading_instead_of_spinning() -> None:
    """A control line of 4096 bytes or more that nats-py's parser does not recognise (nats-server sends
    none; a hostile peer could): nats-py raises for a shorter one and waits for more data past it. The
    floor's parser gives nats-py one whole line at a time, so the wait never ended: it asked again at
    once, for ever, without yielding to the event loop (no pings, no lease renewals; review R3). Now it
    raises nats-py's ProtocolError, which nats-py's reading loop takes as the connection's end. In a
    child process: before the fix the child spun until this test's bound killed it
    (``subprocess.TimeoutExpired``)."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    done = subprocess.run(
        [sys.executable, "-c", _LONG_UNKNOWN_LINE_CHILD],
        check=False, capture_output=True, timeout=SPIN_BOUND_S, env=env,
    )  # fmt: skip
    assert (done.returncode, done.stdout, done.stderr) == (0, b"raised: nats: protocol error\n", b"")
