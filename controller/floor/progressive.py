"""The linked progressive on the floor: one meter shared by the tables of a link (docs/floor.md "Linked
progressive").

The floor runs the one progressive controller (controller/progressive/controller.py) over a store in
PostgreSQL (:class:`PostgresStore`, migration 8: ``floor_progressive_events``, the meter's typed entries
in the order the controller recorded them). Nothing is counted twice and nothing is counted apart:

- **Contributions** come from the journal stream the floor already takes exactly once: each linked
  table's ``round_settled`` entries in ``floor_entries`` (the settlement's ``progressive.contributions.
  wagers``: the settled Progressive wagers, docs/rules.md). :meth:`LinkedProgressive.pump` reads them after
  each table's mark and contributes each round once (keyed by (table, round): a replay changes nothing;
  the unique index ``floor_progressive_contribution_once`` refuses a second row).
- **Claims** are NATS requests on ``progressive.<link>.claim.<table>`` keyed by (table, round),
  answered only after the award is committed; a replayed claim gets the first answer. Requests are
  taken one at a time, in the order they arrive: that order is the order the awards are recorded
  (``claim_number``) and paid in.
- **The meter** is broadcast on ``progressive.<link>.meter`` at least once a second (every
  ``broadcast_interval_s``, and at once after every change), only while the store answers: a table that
  hears no broadcast within its ``link_timeout_s`` counts its link lost.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec
import nats
import nats.errors
import psycopg
import structlog
from nats.aio.client import Client
from nats.aio.msg import Msg
from psycopg.types.json import Jsonb

from controller.errors import UserError, shown
from controller.floor.service_settings import FLOOR_IO_ERRORS, floor_nats_options
from controller.journal import entries as e
from controller.journal.kinds import PROGRESSIVE_KINDS
from controller.progressive.controller import MeterView, ProgressiveController
from controller.progressive.model import Hit, ProgressiveParameters
from controller.uplink.wire import (
    PROGRESSIVE_INBOX,
    PROGRESSIVE_ROOT,
    progressive_claim_subject,
    progressive_confirm_subject,
    progressive_meter_subject,
)
from controller.waits import ReconnectDelay, close_quietly, raise_if_cancelled

log = structlog.get_logger("flushtable.floor.progressive")

MAX_REQUEST_BYTES = 16_384  # a claim names at most 7 seats: anything larger is no claim


# The subjects under the floor's own names (the tests request claims by them).
meter_subject = progressive_meter_subject
claim_subject = progressive_claim_subject
confirm_subject = progressive_confirm_subject


@dataclass(frozen=True, slots=True)
class LinkConfig:
    """One link: its name (the meter's id), its tables, and the meter's parameters (opened at the base
    the first time the floor runs it; a later change is a manager's, journaled as an event)."""

    link_id: str
    tables: tuple[str, ...]
    parameters: ProgressiveParameters


@dataclass(frozen=True, slots=True)
class LinkedConfig:
    servers: tuple[str, ...]
    user: str
    password: str = field(repr=False)
    ca_file: Path
    dsn: str = field(repr=False)
    links: tuple[LinkConfig, ...]
    inbox_prefix: str = PROGRESSIVE_INBOX
    broadcast_interval_s: float = 0.5  # the meter at least once a second, twice to spare a lost one
    backoff_initial_s: float = 0.2
    backoff_max_s: float = 5.0


@dataclass
class LinkedStatus:
    contributions: int = 0
    claims: int = 0
    replays: int = 0
    refusals: int = 0
    waits: int = 0
    broadcasts: int = 0
    reloads: int = 0
    failures: int = 0
    last_error: str = ""


class StaleStore(Exception):
    """Another writer moved the link's events since this service read them: read them again."""


# --- the store ---------------------------------------------------------------------------------------
_ENCODER = msgspec.json.Encoder()
_DECODERS: dict[str, msgspec.json.Decoder[Any]] = {
    kind: msgspec.json.Decoder(e.CLASS_BY_KIND[kind]) for kind in PROGRESSIVE_KINDS
}


# The typed fields of an event the views, pages and unique indexes read (migration 14 for all but the
# first five), in the columns' order: each read off the controller's typed entry, None where its class has
# no such field.
_FIELDS = (
    "table_id", "round_id", "award_id", "claim_number", "amount_cents", "seat", "line", "wagers",
    "in_meter_cents", "to_meter_cents", "hidden_cents", "overflow_cents", "paid_from", "needs_confirmation",
    "meter_before_cents", "meter_after_cents", "reserve_after_cents", "by", "reason",
)  # fmt: skip
_INSERT_EVENTS = (
    f"INSERT INTO floor_progressive_events (link_id, event_no, kind, {', '.join(_FIELDS)}, "
    f"parameters_before, parameters_after, entry, typed_columns) "
    f"VALUES ({', '.join(['%s'] * (len(_FIELDS) + 6))}, 1)"
)  # typed_columns (migration 14, no default): a previous release's INSERT without it is refused


def _columns(entry: e.Entry) -> tuple[object, ...]:
    """An event's typed fields (``_FIELDS``), then its parameters before and after (a parameter change's
    alone; its ``before`` None at the opening is JSON's null, as the entry holds it)."""
    fields = tuple(getattr(entry, name, None) for name in _FIELDS)
    if isinstance(entry, e.ProgressiveParametersChanged):
        return (*fields, Jsonb(entry.before), Jsonb(entry.after))
    return (*fields, None, None)


class PostgresStore:
    """:class:`~controller.progressive.controller.ProgressiveStore` for one link, in PostgreSQL.

    ``commit`` writes the events in one transaction under the link row's lock, after checking that the
    row's event count is the one this store last saw: two services (or a service restarted while its
    old process still commits) never interleave their events; the second is told :class:`StaleStore`
    and reads the meter again."""

    def __init__(self, connection: psycopg.Connection[tuple[Any, ...]], link_id: str) -> None:
        self.connection = connection
        self.link_id = link_id
        self.events = 0

    def ensure_link(self, meter_id: str, tables: Sequence[str]) -> None:
        with self.connection.transaction():
            self.connection.execute(
                "INSERT INTO floor_progressive_links (link_id, meter_id, tables) VALUES (%s, %s, %s) "
                "ON CONFLICT (link_id) DO UPDATE SET tables = excluded.tables",
                (self.link_id, meter_id, list(tables)),
            )
            for table_id in tables:
                self.connection.execute(
                    "INSERT INTO floor_progressive_marks (link_id, table_id) VALUES (%s, %s) "
                    "ON CONFLICT DO NOTHING",
                    (self.link_id, table_id),
                )

    def load(self) -> list[e.Entry]:
        with self.connection.transaction():
            rows = self.connection.execute(
                "SELECT event_no, kind, entry::text FROM floor_progressive_events WHERE link_id = %s "
                "ORDER BY event_no",
                (self.link_id,),
            ).fetchall()
        events: list[e.Entry] = []
        for number, (event_no, kind, text) in enumerate(rows, start=1):
            assert int(event_no) == number, f"link {self.link_id}: event {event_no} out of order"
            events.append(_DECODERS[str(kind)].decode(str(text)))
        self.events = len(events)
        return events

    def commit(self, entries: Sequence[e.Entry]) -> None:
        with self.connection.transaction():
            row = self.connection.execute(
                "SELECT events FROM floor_progressive_links WHERE link_id = %s FOR UPDATE", (self.link_id,)
            ).fetchone()
            if row is None or int(row[0]) != self.events:
                raise StaleStore(
                    f"link {self.link_id}: the store holds {row and row[0]} events, not {self.events}"
                )
            rows = [
                (
                    self.link_id,
                    self.events + index,
                    entry.kind,
                    *_columns(entry),
                    _ENCODER.encode(entry).decode(),
                )
                for index, entry in enumerate(entries, start=1)
            ]
            with self.connection.cursor() as cursor:
                cursor.executemany(_INSERT_EVENTS, rows)
            self.connection.execute(
                "UPDATE floor_progressive_links SET events = %s WHERE link_id = %s",
                (self.events + len(entries), self.link_id),
            )
        self.events += len(entries)

    def publish_state(self, view: MeterView) -> None:
        """The link row's meters for the panels (what the events already say: a convenience, refreshed
        after each change)."""
        with self.connection.transaction():
            self.connection.execute(
                "UPDATE floor_progressive_links SET meter_cents = %s, reserve_cents = %s, "
                "pending_awards = %s, state = %s, updated_utc = clock_timestamp() "
                "WHERE link_id = %s AND events = %s",
                (
                    view.meter_cents,
                    view.reserve_cents,
                    len(view.pending),
                    json.dumps(view.meters),
                    self.link_id,
                    self.events,
                ),
            )


# --- the contribution path ---------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class SettledRound:
    table_id: str
    seq: int
    round_id: str
    wagers: int | None  # the settled Progressive wagers, typed at commit (None: not a count to take)
    # The settlement's "progressive" object as the table wrote it (unchecked), read through the typed
    # entry only when the typed columns do not give the count at the link's unit: to refuse it in words.
    progressive: object = None


def contributed_wagers(progressive: object, unit_cents: int) -> int:
    """The settled Progressive wagers of a round as its ``round_settled`` entry states them (the
    settlement's ``progressive.contributions.wagers``), checked: a table's entry is hostile until read.
    Refused (UserError, one line): no count, or another unit than the link's."""
    if not isinstance(progressive, Mapping):
        raise UserError("the round's settlement has no progressive object")
    contributions = progressive.get("contributions")
    wagers = contributions.get("wagers") if isinstance(contributions, Mapping) else None
    if isinstance(wagers, bool) or not isinstance(wagers, int) or wagers < 0:
        raise UserError(f"the settlement's progressive.contributions.wagers is no count: {shown(wagers)}")
    unit = progressive.get("unit_cents")
    if unit != unit_cents:
        raise UserError(f"the round's progressive unit is {shown(unit)}, not the link's {unit_cents}")
    return wagers


def settled_rounds(
    connection: psycopg.Connection[tuple[Any, ...]], link_id: str, unit_cents: int
) -> tuple[list[SettledRound], dict[str, int]]:
    """The linked tables' settled rounds on the floor after each table's mark (in each table's order),
    and each table's new mark (its last entry on the floor when read). A round's count is its typed
    columns' (migration 14) when they give one at ``unit_cents``; any other round's progressive part is
    read through its typed entry, for ``contributed_wagers`` to judge as it always did."""
    with connection.transaction():
        heads = connection.execute(
            "SELECT m.table_id, m.through_seq, t.last_seq FROM floor_progressive_marks m "
            "JOIN floor_tables t USING (table_id) WHERE m.link_id = %s AND t.last_seq > m.through_seq",
            (link_id,),
        ).fetchall()
        found: list[SettledRound] = []
        marks: dict[str, int] = {}
        for table_id, through_seq, last_seq in heads:
            rows = connection.execute(
                "SELECT seq, round_id, progressive_wagers, CASE WHEN progressive_wagers IS NULL "
                "OR progressive_unit_cents IS DISTINCT FROM %s THEN payload::text END FROM floor_entries "
                "WHERE table_id = %s AND seq > %s AND seq <= %s AND kind = 'round_settled' "
                "AND progressive_settled ORDER BY seq",
                (unit_cents, table_id, through_seq, last_seq),
            ).fetchall()
            for seq, round_id, wagers, payload_text in rows:
                if round_id is None:
                    continue
                if payload_text is None:
                    found.append(SettledRound(str(table_id), int(seq), str(round_id), int(wagers)))
                    continue
                entry = e.decode_public("round_settled", str(payload_text))
                assert isinstance(entry, e.RoundSettled)  # the kind's class
                part = entry.settlement.get("progressive")
                found.append(SettledRound(str(table_id), int(seq), str(round_id), None, part))
            marks[str(table_id)] = int(last_seq)
    return found, marks


def record_refusal(  # noqa: PLR0913, PLR0917 - one refusal's context
    connection: psycopg.Connection[tuple[Any, ...]],
    link_id: str,
    table_id: str,
    round_id: str | None,
    reason: str,
    request: str,
    *,
    seq: int | None = None,
) -> None:
    """A refused claim or contribution: kept (floor_progressive_refusals) and raised as a floor alert,
    once per (table, round, reason): the same claim asked again is answered the same, not recorded again
    (a table's link client may send a claim twice when its first answer was lost)."""
    with connection.transaction():
        if round_id is not None:
            connection.execute(
                "SELECT 1 FROM floor_progressive_links WHERE link_id = %s FOR UPDATE", (link_id,)
            )
            seen = connection.execute(
                "SELECT 1 FROM floor_progressive_refusals WHERE link_id = %s AND table_id = %s "
                "AND round_id = %s AND reason = %s",
                (link_id, table_id, round_id, reason),
            ).fetchone()
            if seen is not None:
                return
        connection.execute(
            "INSERT INTO floor_progressive_refusals (link_id, table_id, round_id, reason, request) "
            "VALUES (%s, %s, %s, %s, %s)",
            (link_id, table_id, round_id, reason, request[:MAX_REQUEST_BYTES]),
        )
        connection.execute(
            "INSERT INTO floor_alerts (table_id, seq, origin, kind, message) "
            "VALUES (%s, %s, 'floor', 'progressive_refused', %s)",
            (table_id, seq, f"link {link_id}: {reason}"),
        )


# --- one link ----------------------------------------------------------------------------------------
class Link:
    """One link's controller on the floor, with its store. Every method runs on the service's one
    worker thread, one at a time (``LinkedProgressive._call``)."""

    def __init__(self, config: LinkConfig, connection: psycopg.Connection[tuple[Any, ...]]) -> None:
        self.config = config
        self.connection = connection
        self.store = PostgresStore(connection, config.link_id)
        self.store.ensure_link(config.link_id, config.tables)
        self.controller = ProgressiveController(self.store)
        self.controller.open_now(config.link_id, config.parameters, by="floor")
        self.store.publish_state(self.controller.meter_now())
        self.changed = True

    def pump(self, status: LinkedStatus) -> int:
        """Contribute every settled round of the link's tables the floor holds and the meter does not."""
        state = self.controller.state
        unit = 0 if state.parameters is None else state.parameters.settings.unit_cents
        found, marks = settled_rounds(self.connection, self.config.link_id, unit)
        if not found and not marks:
            return 0
        # One transaction for the whole count (each contribution's commit is a savepoint in it): a busy
        # floor's hundreds of rounds a tick cost one commit, not one each, and the broadcast that follows
        # is not held up past the tables' bound (one commit a round held it for seconds in the bench).
        # Should it fail, the store's event count no longer matches and the meter is read again.
        with self.connection.transaction():
            return self._count(found, marks, status)

    def _count(self, found: list[SettledRound], marks: dict[str, int], status: LinkedStatus) -> int:
        state = self.controller.state
        unit = 0 if state.parameters is None else state.parameters.settings.unit_cents
        counted = 0
        for settled in found:
            if (settled.table_id, settled.round_id) in state.contributions:
                continue  # counted before the mark moved (a crash between the two): never twice
            try:
                wagers = settled.wagers
                if wagers is None:
                    wagers = contributed_wagers(settled.progressive, unit)
                if wagers == 0:
                    continue
                self.controller.contribute_now(settled.table_id, settled.round_id, wagers)
            except UserError as error:
                reason = f"contribution of round {settled.round_id} refused: {error}"
                where = {"link": self.config.link_id, "table_id": settled.table_id}
                log.error(
                    "progressive_contribution_refused", **where, round_id=settled.round_id, reason=str(error)
                )
                request = json.dumps(settled.progressive)[:2000]
                record_refusal(
                    self.connection, self.config.link_id, settled.table_id, settled.round_id, reason, request,
                    seq=settled.seq,
                )  # fmt: skip
                status.refusals += 1
                continue
            counted += 1
        if marks:
            with self.connection.cursor() as cursor:
                cursor.executemany(
                    "UPDATE floor_progressive_marks SET through_seq = %s "
                    "WHERE link_id = %s AND table_id = %s AND through_seq < %s",
                    [(seq, self.config.link_id, table_id, seq) for table_id, seq in marks.items()],
                )
        if counted:
            status.contributions += counted
            self.changed = True
        return counted

    def table_through(self, table_id: str) -> tuple[int, bool]:
        """(the table's last entry on the floor, whether the floor quarantined it)."""
        with self.connection.transaction():
            row = self.connection.execute(
                "SELECT last_seq, quarantined_at_seq IS NOT NULL FROM floor_tables WHERE table_id = %s",
                (table_id,),
            ).fetchone()
        return (0, False) if row is None else (int(row[0]), bool(row[1]))

    def claim(self, table_id: str, body: bytes, status: LinkedStatus) -> dict[str, Any]:
        """One claim request: the answer (recorded, replayed, refused) or ``wait`` (the floor does not
        yet hold the round's settlement: the table asks again)."""
        text = body[:MAX_REQUEST_BYTES].decode("utf-8", "replace")
        try:
            request = _parse_claim(body, table_id, self.config.tables)
        except UserError as error:
            return self._refuse(table_id, None, str(error), text, status)
        round_id, hits, through_seq, by = request
        key = (table_id, round_id)
        if key in self.controller.state.claims:
            status.replays += 1
            answer = self.controller.claim_now(table_id, round_id, hits, by=by)  # the first answer
            return {"status": "replayed", **answer.to_json()}
        if key not in self.controller.state.contributions:
            # Where the floor stands is read before the contributions are counted again: a round the
            # count then still lacks, at or below that entry, was never contributed. (Read after, the
            # floor service could commit the round between the two reads and the claim would be refused
            # for a round the count had not yet read: found by the kill test.)
            held, quarantined = self.table_through(table_id)
            self.pump(status)  # the round's settlement may have reached the floor since the last tick
            if key not in self.controller.state.contributions and (held < through_seq or quarantined):
                status.waits += 1
                why = "quarantined on the floor" if quarantined else f"the floor holds entry {held}"
                return {
                    "status": "wait",
                    "reason": f"round {round_id}'s settlement not yet on the floor ({why})",
                }
        try:
            answer = self.controller.claim_now(table_id, round_id, hits, by=by)
        except UserError as error:
            return self._refuse(table_id, round_id, str(error), text, status)
        status.claims += 1
        self.changed = True
        return {"status": "replayed" if answer.replayed else "recorded", **answer.to_json()}

    def confirm(self, table_id: str, body: bytes, status: LinkedStatus) -> dict[str, Any]:
        try:
            request = json.loads(body[:MAX_REQUEST_BYTES])
            award_id = request["award_id"] if isinstance(request, dict) else None
            by = request.get("by") if isinstance(request, dict) else None
            if not isinstance(award_id, str) or not isinstance(by, str) or not by.strip():
                raise UserError("a confirmation names an award_id and who confirmed it (by)")
            award = self.controller.state.award(award_id)
            if award is None or award.claimed.table_id != table_id:
                raise UserError(f"no award {shown(award_id, 80)} was recorded for table {table_id}")
            answer = self.controller.confirm_paid_now(award_id, by=by)
        except (UserError, ValueError) as error:
            text = body[:MAX_REQUEST_BYTES].decode("utf-8", "replace")
            return self._refuse(table_id, None, f"confirmation refused: {error}", text, status)
        self.changed = True
        return {"status": "replayed" if answer.replayed else "paid", "award": answer.award.to_json()}

    def _refuse(
        self, table_id: str, round_id: str | None, reason: str, text: str, status: LinkedStatus
    ) -> dict[str, Any]:
        line = reason.splitlines()[0] if reason else "refused"
        record_refusal(self.connection, self.config.link_id, table_id, round_id, line, text)
        status.refusals += 1
        log.warning("progressive_claim_refused", link=self.config.link_id, table_id=table_id, reason=line)
        return {"status": "refused", "reason": line, "table_id": table_id, "round_id": round_id}

    def broadcast(self) -> bytes:
        view = self.controller.meter_now()
        if self.changed:
            self.store.publish_state(view)
            self.changed = False
        return json.dumps(
            {
                "link_id": self.config.link_id,
                "meter_id": view.meter_id,
                "events": self.store.events,
                "meter_cents": view.meter_cents,
                "reserve_cents": view.reserve_cents,
                "unit_cents": view.unit_cents,
                "pending": [award.to_json() for award in view.pending],
            },
            separators=(",", ":"),
        ).encode()


def _parse_claim(body: bytes, table_id: str, tables: Sequence[str]) -> tuple[str, list[Hit], int, str]:
    if table_id not in tables:
        raise UserError(f"table {table_id} is not on this link")
    try:
        request = json.loads(body)
    except ValueError:
        raise UserError("a claim is a JSON object; this is not JSON") from None
    if not isinstance(request, dict):
        raise UserError("a claim is a JSON object")
    if request.get("table_id") != table_id:
        raise UserError(f"the claim names table {shown(request.get('table_id'))}, not its sender {table_id}")
    round_id = request.get("round_id")
    if not isinstance(round_id, str) or not 0 < len(round_id) <= 100:
        raise UserError(f"the claim's round_id is no round: {shown(round_id)}")
    through_seq = request.get("through_seq")
    if isinstance(through_seq, bool) or not isinstance(through_seq, int) or through_seq < 1:
        raise UserError(
            f"the claim's through_seq (the round's settling entry) is no entry: {shown(through_seq)}"
        )
    raw_hits = request.get("hits")
    if not isinstance(raw_hits, list) or not 0 < len(raw_hits) <= 7:
        raise UserError("the claim's hits are a list of 1 to 7 {seat, run_length}")
    hits: list[Hit] = []
    for hit in raw_hits:
        seat = hit.get("seat") if isinstance(hit, dict) else None
        run = hit.get("run_length") if isinstance(hit, dict) else None
        if any(isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= 20 for v in (seat, run)):
            raise UserError(f"a hit is {{seat, run_length}} as small whole numbers, not {shown(hit, 80)}")
        assert isinstance(seat, int)
        assert isinstance(run, int)
        hits.append(Hit(seat, run))
    by = request.get("by", "engine")
    return round_id, hits, through_seq, by if isinstance(by, str) and by.strip() else "engine"


# --- the service -------------------------------------------------------------------------------------
_INFRASTRUCTURE_ERRORS: tuple[type[BaseException], ...] = (*FLOOR_IO_ERRORS, StaleStore)


class LinkedProgressive:
    """The floor's linked progressive: every configured link, its claims, its contributions and its
    broadcasts. Run by `flushtable floor serve` beside the floor service (or on its own)."""

    def __init__(self, config: LinkedConfig, *, rng: random.Random | None = None) -> None:
        self.config = config
        self.status = LinkedStatus()
        self.links: dict[str, Link] = {}
        self._rng = rng or random.Random()
        self.ready = asyncio.Event()  # set once every link is loaded and its subjects subscribed

    async def run(self, stop: asyncio.Event) -> None:
        retry = ReconnectDelay.of(self.config, self._rng)
        while not stop.is_set():
            raise_if_cancelled()
            client: Client | None = None
            connection: psycopg.Connection[tuple[Any, ...]] | None = None
            try:
                client = await nats.connect(**floor_nats_options(self.config, "flushtable-progressive"))
                connection = await asyncio.to_thread(psycopg.connect, self.config.dsn, autocommit=True)
                assert connection is not None
                await self._serve(client, connection, stop)
                retry.reset()
            except _INFRASTRUCTURE_ERRORS as error:
                self.status.failures += 1
                self.status.last_error = f"{type(error).__name__}: {error}"[:300]
                log.warning("progressive_retry", error=self.status.last_error)
            except Exception as error:  # a bug: said loudly, retried like an outage
                self.status.failures += 1
                self.status.last_error = f"{type(error).__name__}: {error}"[:300]
                log.exception("progressive_unexpected_error", error=self.status.last_error)
            finally:
                self.ready.clear()
                self.links.clear()  # read again from the store: nothing in memory outlives a failure
                await close_quietly(client.close() if client is not None else None)
                if connection is not None:
                    with contextlib.suppress(Exception):
                        await asyncio.to_thread(connection.close)
            if stop.is_set():
                break
            await retry.wait(stop)

    async def _serve(
        self, client: Client, connection: psycopg.Connection[tuple[Any, ...]], stop: asyncio.Event
    ) -> None:
        for link_config in self.config.links:
            self.links[link_config.link_id] = await asyncio.to_thread(Link, link_config, connection)
        requests: asyncio.Queue[tuple[str, str, Msg]] = asyncio.Queue()
        for link_id in self.links:

            async def take(message: Msg, link_id: str = link_id) -> None:
                await requests.put((link_id, message.subject, message))

            await client.subscribe(claim_subject(link_id, "*"), cb=take)
            await client.subscribe(confirm_subject(link_id, "*"), cb=take)
        await client.flush()
        self.ready.set()
        log.info("progressive_serving", links=sorted(self.links))
        next_tick_s = 0.0
        while not stop.is_set():
            raise_if_cancelled()
            if client.is_closed or not client.is_connected:
                raise nats.errors.ConnectionClosedError
            now_s = time.monotonic()
            if now_s >= next_tick_s:
                await self._tick(client)
                next_tick_s = time.monotonic() + self.config.broadcast_interval_s
                continue
            try:
                async with asyncio.timeout(next_tick_s - now_s):
                    link_id, subject, message = await requests.get()
            except TimeoutError:
                continue
            await self._answer(client, link_id, subject, message)

    async def _tick(self, client: Client) -> None:
        """Count what the floor took since the last tick, then broadcast every meter (only after the
        store answered: a meter the controller cannot record to is not shown as live)."""
        for link in self.links.values():
            await asyncio.to_thread(link.pump, self.status)
            payload = await asyncio.to_thread(link.broadcast)
            await client.publish(meter_subject(link.config.link_id), payload)
            self.status.broadcasts += 1

    async def _answer(self, client: Client, link_id: str, subject: str, message: Msg) -> None:
        link = self.links[link_id]
        parts = subject.split(".")
        table_id = parts[-1]
        if parts[-2] == "claim":
            answer = await asyncio.to_thread(link.claim, table_id, message.data, self.status)
        else:
            answer = await asyncio.to_thread(link.confirm, table_id, message.data, self.status)
        if message.reply:
            # Answered only now: what the answer says is committed (the controller commits, then folds).
            await message.respond(json.dumps(answer, separators=(",", ":")).encode())
        if link.changed:
            await client.publish(meter_subject(link_id), await asyncio.to_thread(link.broadcast))
            self.status.broadcasts += 1


__all__ = [
    "PROGRESSIVE_ROOT",
    "LinkConfig",
    "LinkedConfig",
    "LinkedProgressive",
    "LinkedStatus",
    "PostgresStore",
    "claim_subject",
    "confirm_subject",
    "contributed_wagers",
    "meter_subject",
]
