"""The floor service's deliveries as they come off the wire, without nats-py's per-message work that
the floor does not need (docs/floor.md "CPU per message").

nats-py builds a ``Msg`` for every message it receives: every header parsed into a dict (a Python loop
over each character of each header name, the largest single cost of a delivery in the floor's profile),
the subject and reply decoded, and the JetStream metadata parsed again from the reply subject (a
datetime among it) when the floor asks for the stream sequence. A floor delivery needs its subject, its
body, its stream sequence and, rarely, a header: ``FloorClient`` hands the floor's own subscription a
``Delivery`` with the header block kept as bytes (``RawHeaders``: parsed, with nats-py's own parser,
only if a header is asked for that the block holds), and the stream sequence read from its reply
subject. Everything else (status messages, every other subscription) goes nats-py's way unchanged.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, ItemsView, Iterator, KeysView, Mapping, Sequence, ValuesView
from typing import TYPE_CHECKING

import msgspec
from nats import errors as nats_errors
from nats.aio import client as nats_client
from nats.aio.client import Client
from nats.protocol import parser as nats_parser

from controller.floor.messages import Incoming

__all__ = ["Delivery", "FloorClient", "RawHeaders", "stream_seq_of_reply"]

_HEADER_LINE = b"NATS/1.0"
_CRLF = b"\r\n"
# Where an inline status would begin in a header block (``NATS/1.0 404``): read per message, so fixed.
_STATUS_AT = len(_HEADER_LINE)
_AFTER_STATUS_AT = _STATUS_AT + 1

# What RawHeaders is to a type checker: a Mapping. At run time msgspec's struct cannot also derive from
# Mapping (their metaclasses conflict), so it is registered as one instead (below).
if TYPE_CHECKING:
    _MAPPING_BASE = Mapping[str, str]
else:

    class _MAPPING_BASE:  # the type checker sees Mapping[str, str] under this name
        __slots__ = ()


# The header names the floor asks every message for, as the bytes a block would spell them: encoded
# once, not at each look (the floor asks each message whether it was sourced from a site).
_NEEDLES: dict[str, bytes] = {"Nats-Stream-Source": b"Nats-Stream-Source", "Nats-Msg-Id": b"Nats-Msg-Id"}


class RawHeaders(msgspec.Struct, _MAPPING_BASE):
    """A message's header block (``NATS/1.0\\r\\nName: value\\r\\n...``), parsed on first need by
    nats-py's own parser (so what a header reads as is what nats-py would say). ``get`` of a name
    whose bytes the block does not hold answers at once: the floor asks every message whether it was
    sourced from a site (``Nats-Stream-Source``), and a table's message never is on a one-site floor.

    A msgspec struct, built in C (one a message: a Python ``__init__`` was a tenth of a microsecond of
    each delivery's intake), registered as a ``Mapping`` and given its methods (docs/floor.md "The
    seventh stop")."""

    _raw: bytes
    _parsed: dict[str, str] | None = None

    def _dict(self) -> dict[str, str]:
        if self._parsed is None:
            self._parsed = Client._parse_header_lines(self._raw[len(_HEADER_LINE) + len(_CRLF) :])
        return self._parsed

    def get(self, key: str, default: str | None = None) -> str | None:  # type: ignore[override]
        if self._parsed is None:
            needle = _NEEDLES.get(key)
            if needle is None:
                needle = key.encode("utf-8", "replace")
            # ``find``, not ``in``: bytes' ``in`` takes any buffer and measured twice find's cost here.
            if self._raw.find(needle) < 0:
                return default
        return self._dict().get(key, default)

    def __getitem__(self, key: str) -> str:
        return self._dict()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._dict())

    def __len__(self) -> int:
        return len(self._dict())

    def __contains__(self, key: object) -> bool:
        return key in self._dict()

    def keys(self) -> KeysView[str]:
        return self._dict().keys()

    def items(self) -> ItemsView[str, str]:
        return self._dict().items()

    def values(self) -> ValuesView[str]:
        return self._dict().values()

    def __eq__(self, other: object) -> bool:
        if isinstance(other, RawHeaders):
            return self._dict() == other._dict()
        return isinstance(other, Mapping) and self._dict() == dict(other.items())

    def __ne__(self, other: object) -> bool:  # the struct's own != would not be the mapping's
        return not self.__eq__(other)

    __hash__ = None  # type: ignore[assignment]  # a mapping, unhashable as Mapping is


Mapping.register(RawHeaders)

_NO_HEADERS: Mapping[str, str] = {}


def stream_seq_of_reply(reply: str) -> int:
    """The stream sequence of a JetStream delivery, from its ack subject: ``$JS.ACK.<stream>.<consumer>.
    <delivered>.<stream seq>.<consumer seq>.<time>.<pending>`` (9 tokens) or, from servers that name a
    domain and account, ``$JS.ACK.<domain>.<account>.<stream>.<consumer>.<delivered>.<stream seq>...``
    (11 or more), as nats-py's ``Msg.Metadata`` reads it. ValueError: not a JetStream delivery."""
    tokens = reply.split(".")
    count = len(tokens)
    if count < 9 or count == 10 or tokens[0] != "$JS" or tokens[1] != "ACK":
        raise ValueError(f"not a JetStream delivery's reply subject: {reply[:80]!r}")
    return int(tokens[5] if count == 9 else tokens[7])


class Delivery(Incoming, frozen=True):
    """One message the floor's consumer delivered: the ``Incoming`` the checks read (its stream sequence
    read once, here, from its ack subject) and its ack subject. A msgspec struct (built in C; one a
    message)."""

    reply: str


class FloorClient(Client):
    """nats-py's client; a subscription registered with ``deliver_raw`` gets each message with a body
    as a ``Delivery`` (called synchronously, in the order received), not a ``Msg``. A message without a
    body (a status: 404, 408, 409, a heartbeat) or whose header block opens with an inline status goes
    nats-py's way to the subscription's own callback, as does everything when nats-py reads headers with
    its optional e-mail parser (its header semantics are then that parser's)."""

    def __init__(self) -> None:
        super().__init__()
        self._raw_handlers: dict[int, Callable[[Delivery], None]] = {}
        self._ps = _FloorParser(self)  # reset, not replaced, at each reconnection

    def deliver_raw(self, sid: int, handler: Callable[[Delivery], None]) -> None:
        self._raw_handlers[sid] = handler

    async def publish_empty(self, subjects: Sequence[str]) -> None:
        """An empty message to each subject (a JetStream ack to each delivery's reply subject), the same
        protocol bytes ``publish(subject, b"")`` sends for each, buffered as one command: a batch's
        thousand acks were a thousand ``publish`` calls, each checking the connection, formatting its
        command and queueing it. The subjects are reply subjects as nats-py's parser read them off the
        wire (split at whitespace: none holds a space or a line break); an empty one is refused as
        ``publish`` refuses it. Nothing is queued if any is refused or the connection cannot take it."""
        await self.publish_to_each(subjects, b"")

    async def publish_to_each(self, subjects: Sequence[str], payload: bytes) -> None:
        """``payload`` to each subject, as ``publish_empty`` sends an empty one (the same bytes
        ``publish(subject, payload)`` sends for each, one command): a batch kept in progress sends
        ``+WPI`` to each of its deliveries every interval (controller/floor/in_progress.py), a
        ``publish`` call each before (2-3% of the service's profile at a load of 25, where batches
        outlast the interval)."""
        if not subjects:
            return
        if self.is_closed:
            raise nats_errors.ConnectionClosedError
        if self.is_draining_pubs:
            raise nats_errors.ConnectionDrainingError
        if "" in subjects:  # in C: 123 instructions a subject, against 335 for a generator in any()
            raise nats_errors.BadSubjectError
        tail = b"  " + str(len(payload)).encode() + b"\r\n" + payload + b"\r\n"
        # One join in C, each separator a command's tail and the next one's opening: the same bytes as
        # ``b"PUB " + subject.encode() + tail`` joined, without two concatenations a subject in Python
        # (together about 1,000 of the 1,840 instructions a message the acks cost; docs/floor.md "Twelfth
        # stop: where the service's whole CPU goes").
        command = b"PUB " + (tail + b"PUB ").join(map(str.encode, subjects)) + tail
        if not self.is_connected and (
            self._max_pending_size <= 0 or len(command) + self._pending_data_size > self._max_pending_size
        ):
            raise nats_errors.OutboundBufferLimitError
        self.stats["out_msgs"] += len(subjects)
        await self._send_command(command)
        if self._flush_queue is not None and self._flush_queue.empty():
            await self._flush_pending()

    def _raw_delivery(
        self, sid: int, subject: bytes, reply: bytes, data: bytes, headers: bytes | None
    ) -> bool:
        """The message handed to its subscription's raw handler as a ``Delivery`` (True), or False:
        it goes nats-py's way (no raw handler, no body, an inline status, no JetStream reply subject,
        or nats-py reading headers with its e-mail parser)."""
        handler = self._raw_handlers.get(sid)
        if (
            handler is None
            or not data
            or getattr(nats_client, "parse_email", None) is not None
            or (headers is not None and headers[_STATUS_AT:_AFTER_STATUS_AT] == b" ")
        ):
            return False
        reply_text = reply.decode()
        try:
            stream_seq = stream_seq_of_reply(reply_text)
        except ValueError:  # no JetStream delivery: the subscription's own callback judges it
            return False
        self.stats["in_msgs"] += 1
        self.stats["in_bytes"] += len(data)
        handler(
            Delivery(
                stream_seq,
                subject.decode(),
                RawHeaders(headers) if headers is not None else _NO_HEADERS,
                data,
                reply_text,
            )
        )
        return True

    async def _process_msg(
        self, sid: int, subject: bytes, reply: bytes, data: bytes, headers: bytes | None
    ) -> None:
        if not self._raw_delivery(sid, subject, reply, data, headers):
            await super()._process_msg(sid, subject, reply, data, headers)  # type: ignore[arg-type]


_HMSG = b"HMSG "
_HMSG_SIZE = len(_HMSG)
_CRLF_SIZE = len(_CRLF)
# An HMSG control line's five fields (subject, sid, reply, header size, total size) take four separators.
_HMSG_FIELDS = 5


class _RunEnd(enum.Enum):
    """How a run of raw deliveries ended (``_FloorParser._raw_run``)."""

    NOT_RAW = "the first operation in the buffer is not a raw delivery: nats-py's parser reads it"
    READ = "raw deliveries read; the next operation is not one (or not yet a whole control line)"
    WAITS = "the next raw delivery's payload is not all read yet: nothing more until it is"


_RUN_NOT_RAW, _RUN_READ, _RUN_WAITS = _RunEnd.NOT_RAW, _RunEnd.READ, _RunEnd.WAITS


class _FloorParser(nats_parser.Parser):
    """nats-py's protocol parser, with a run of raw deliveries read off the buffer at once.

    nats-py's ``parse`` matches each message's control line with two regular expressions (``MSG``, then
    ``HMSG``), copies its parts out of a ``bytearray`` twice, and awaits a coroutine per message
    (``_process_msg``): 4.5-5.5 us of process CPU a floor delivery, 3.0-3.3 here
    (bench/bench_floor_intake.py, docs/floor.md "Tenth stop"). Here the deliveries at the buffer's
    front that ``FloorClient`` takes raw (an ``HMSG`` to a raw subscription with a body, read whole)
    are split off one ``bytes`` copy of the buffer and handed over synchronously, in order; one whose
    payload has not all come is waited for (``_raw_run``). Anything else (a status, a ``PING``,
    ``INFO``, ``-ERR``, another subscription's message, a control line spelled otherwise than
    nats-server spells it, or not yet whole) is given to nats-py's own ``parse`` one operation at a
    time, so it reads it as before, in its place in the order."""

    def __init__(self, client: FloorClient) -> None:
        super().__init__(client)
        self._client = client
        # A raw delivery not yet whole at the buffer's front (``_raw_run``): the buffer, and its length
        # once the delivery is whole. Until then a read only adds to the buffer, as nats-py's own wait
        # for a payload does: the buffer is not copied and read again for each read (a hostile table's
        # megabyte message in 32 KiB reads would be copied 32 times). Another buffer (a reset, at a
        # reconnection) ends the wait.
        self._whole_at: tuple[bytearray, int] | None = None

    async def parse(self, data: bytes = b"") -> None:
        self.buf.extend(data)
        while buf := self.buf:  # read again each turn: a reset (a reconnection) makes a new one
            if self._whole_at is not None and self._still_waiting(buf):
                return
            if self.state == nats_parser.AWAITING_CONTROL_LINE and buf.startswith(_HMSG):
                read = self._raw_run()
                if read is _RUN_WAITS:
                    return  # the next raw delivery is not whole yet: nats-py too waits for its payload
                if read is _RUN_READ:
                    continue
            # One operation (a control line, or the payload it announced) alone in nats-py's buffer.
            if self.state == nats_parser.AWAITING_MSG_PAYLOAD:
                end = self.needed + nats_parser.CRLF_SIZE
            else:
                end = buf.find(_CRLF) + _CRLF_SIZE
                if end < _CRLF_SIZE:  # no whole line yet: nats-py waits for more too
                    return
            if len(buf) < end:
                return
            rest = buf[end:]
            del buf[end:]
            try:
                await super().parse()
                unread = self.buf is buf and len(buf) == end
            finally:
                if self.buf is buf:  # not reset meanwhile (nats-py's own loop would stop at an empty one)
                    buf.extend(rest)
            if unread:
                # A whole line nats-py did not read: its own parse says so for a line shorter than its
                # MAX_CONTROL_LINE_SIZE and waits for more past it, which, the line given whole, would
                # turn this loop without ever yielding (its reading loop ends the connection for it).
                raise nats_errors.ProtocolError("nats: unknown protocol")

    def _still_waiting(self, buf: bytearray) -> bool:
        """Whether the raw delivery at the front of ``buf`` is still not whole (``_whole_at``)."""
        waiting = self._whole_at
        if waiting is not None and waiting[0] is buf and len(buf) < waiting[1]:
            return True
        self._whole_at = None
        return False

    def _raw_run(self) -> _RunEnd:
        """The raw deliveries at the buffer's front handed over and taken off it, and why the run ended
        (``_RunEnd``). What makes a message raw is ``FloorClient._raw_delivery``'s rule, read here
        inline (a call less a message) with the rule's message-independent part asked once a run.

        A raw delivery whose control line is whole but whose payload is not (a read of the socket ends
        inside it: about one a read) is waited for here, as nats-py's parser waits for a payload it has
        read the line of: given to nats-py's parser, its line was read by its regular expressions and the
        message, once whole, handed over through ``_process_msg``, a coroutine (2% of the service's
        samples at the tenth stop's head, docs/floor.md "Eleventh stop"). Whether it is raw (its inline
        status) is judged once it is whole, as before."""
        client = self._client
        if getattr(nats_client, "parse_email", None) is not None:
            return _RUN_NOT_RAW
        handlers = client._raw_handlers
        buf = self.buf
        data = bytes(buf)
        size = len(data)
        at = count = body_bytes = 0
        try:
            while data.startswith(_HMSG, at):
                line_end = data.find(_CRLF, at)
                if line_end < 0:
                    break
                line = data[at + _HMSG_SIZE : line_end]
                fields = line.split()
                # nats-server's spelling only (one space between fields, sizes in ASCII digits): any
                # other goes to nats-py's regular expression, which reads more spellings.
                if len(fields) != _HMSG_FIELDS or b" ".join(fields) != line:
                    break
                subject, sid, reply, header_size, total_size = fields
                if not (header_size + total_size).isdigit():
                    break
                try:
                    handler = handlers.get(int(sid))
                except ValueError:  # nats-py's int() of it refuses it too: its ProtocolError
                    break
                headers_at = line_end + _CRLF_SIZE
                header_end = headers_at + int(header_size)
                payload_end = headers_at + int(total_size)
                if handler is None or not headers_at < header_end < payload_end:
                    break  # another subscription's, without headers, or without a body
                if payload_end + _CRLF_SIZE > size:
                    # Not yet whole: the rest of it is read first (what the run read is taken off).
                    self._whole_at = (buf, payload_end + _CRLF_SIZE - at)
                    return _RUN_WAITS
                headers = data[headers_at:header_end]
                if headers[_STATUS_AT:_AFTER_STATUS_AT] == b" ":
                    break  # an inline status (``NATS/1.0 404``)
                reply_text = reply.decode()
                try:
                    stream_seq = stream_seq_of_reply(reply_text)
                except ValueError:  # no JetStream delivery: the subscription's own callback judges it
                    break
                body = data[header_end:payload_end]
                handler(Delivery(stream_seq, subject.decode(), RawHeaders(headers), body, reply_text))
                count += 1
                body_bytes += len(body)
                at = payload_end + _CRLF_SIZE  # nats-py, too, skips the two bytes after a payload unread
        finally:
            del buf[:at]
            client.stats["in_msgs"] += count
            client.stats["in_bytes"] += body_bytes
        return _RUN_READ if at > 0 else _RUN_NOT_RAW
