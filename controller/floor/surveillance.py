"""Significant events for surveillance (docs/operations.md "Surveillance events", docs/floor.md
"Surveillance"): the entries a surveillance room watches — big wins, past-posting, dead hands, dead
rounds, voids, kills, overrides, the tables' alerts (software and clock ones too) — published by the
floor service on ``surveillance.<table>`` in one JSON shape (docs/surveillance-event.schema.json).

``events_of`` is pure: one floor entry (its public part, never a private one) to its events, each with
an id that is a function of the entry alone (``<table>:<seq>:<n>``), sent as the message's
``Nats-Msg-Id``: the stream SURVEILLANCE keeps the first of an id, and the publisher's mark per table
(``floor_surveillance_marks``) moves only after the stream acknowledged every event up to it, so each
event is published at least once and stored once. What an event says is what the table journaled: its
``details`` are fields of the entry's public part as they are, with the entry's hash to find it.

The alerts the floor raises itself (``floor_alerts`` rows of origin ``floor``: a software check's
mismatch or no answer, a fork, a quarantined table's gap or broken chain, a progressive reconciliation
difference, a refused link claim) are in no table's journal: ``alert_event_of`` makes each one event
with ``source`` "floor" and the id ``floor:<alert_id>``, published on ``surveillance.<table>`` and marked
per alert (``floor_surveillance_alert_marks``) after its ack. Per alert, not a high-water mark: alert
ids are taken from a sequence before their transactions commit, so a smaller id can become visible
after a larger one was published; a mark per id never skips it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import msgspec

from controller.floor import gaming_day
from controller.journal import entries as typed
from controller.journal.render import typed_entry
from controller.money import MoneyFormat

SCHEMA = "flushtable-surveillance/1"
SUBJECT_PREFIX = "surveillance"
STREAM = "SURVEILLANCE"

EVENT_TYPES: tuple[str, ...] = (
    "big_win",
    "past_posting",
    "dead_hand",
    "dead_round",
    "void",
    "kill",
    "override",
    "alert",
    "security",
)
CATEGORIES: tuple[str, ...] = ("game", "device", "security", "integrity", "software", "clock", "operations")

# A table's alert (``fault_raised``) by its kind: the category a surveillance room files it under. The
# place for the kinds other parts add: a software verification failure, a configuration changed on
# disk, a clock past its bound. A kind not listed is filed by its name's start (software_, release_,
# config_ -> software; clock_ -> clock), else under "operations".
ALERT_CATEGORIES: dict[str, str] = {
    "red_light": "device",
    "device_lost": "device",
    "shuffler_fault": "device",
    "deck_verification": "device",
    "over_limit_raise": "game",
    "security_event": "security",
    "integrity": "integrity",
    "journal_error": "software",
    "supervisor_hold": "operations",
    "software_verification": "software",
    "software_mismatch": "software",
    "config_changed": "software",
    "clock_offset": "clock",
    "clock_drift": "clock",
}
# The floor's own alerts by their kind (docs/floor.md "Surveillance"); a kind not listed here is filed
# as a table's alert would be (alert_category).
FLOOR_ALERT_CATEGORIES: dict[str, str] = {
    "fork": "integrity",
    "gap": "integrity",
    "broken_chain": "integrity",
    "stream_renumbered": "integrity",
    "entry_after_close": "integrity",
    "entry_without_start": "integrity",
    "undecodable": "integrity",
    "bad_subject": "integrity",
    "wrong_site": "integrity",
    "wrong_table": "integrity",
    "floor_error": "software",
    "progressive_reconciliation": "game",
    "progressive_refused": "game",
}
FLOOR_SOURCE = "floor"  # an event's source when the floor raised it (no table's entry behind it)
FLOOR_SUBJECT = "floor"  # surveillance.floor: a floor alert naming no table (none does today)
# These alerts are the same fact as an event of their own (the past_posting and dead_hand entries):
# published once, as that event.
ALERTS_WITH_THEIR_OWN_EVENT: frozenset[str] = frozenset({"past_posting", "dead_hand"})
OPERATOR_KINDS = gaming_day.OPERATOR_KINDS  # kills and overrides: as the gaming-day report counts them
# Amounts alone, two decimals: what a floor with no [property] currency shows everywhere.
DEFAULT_MONEY = MoneyFormat()

# The entry kinds that can make an event (the publisher reads only these from floor_entries).
EVENT_ENTRY_KINDS: tuple[str, ...] = (
    "round_settled",
    "past_posting",
    "dead_hand",
    "round_dead",
    "round_voided",
    *sorted(OPERATOR_KINDS),
    "fault_raised",
    "security_event",
)
_WATCHED_KINDS = frozenset(EVENT_ENTRY_KINDS)  # events_of decodes only these
# The kinds as one text[] literal, written once: each a plain lower-case name (none needs quoting).
assert all(kind.replace("_", "").isalpha() and kind.islower() for kind in EVENT_ENTRY_KINDS)
_EVENT_KINDS_LITERAL = "{" + ",".join(EVENT_ENTRY_KINDS) + "}"


@dataclass(frozen=True, slots=True)
class FloorEntry:
    table_id: str
    seq: int
    time_utc: str  # as the table wrote it
    round_id: str | None
    source: str
    kind: str
    payload: Mapping[str, Any]
    hash: str


def _operator_event(action: typed.Entry) -> list[tuple[str, str, str, dict[str, Any]]]:
    """A supervisor's kill or override as its event (none for any other operator entry). The event's
    ``details`` keep the shape they have always had (``action``, ``by``, ``detail``: the engine's words
    of releases up to 9254278, rebuilt from the typed fields; docs/operations.md "Surveillance")."""
    if isinstance(action, gaming_day.KILL_ENTRIES) and isinstance(action, typed.SeatKilled):
        asked = f" at the {action.requested_by}'s request" if action.requested_by else ""
        if action.excluded:
            detail = f"seat {action.seat} excluded from the round: {action.reason}"
        else:
            detail = f"seat {action.seat}{asked}: {action.reason}"
        return [
            ("kill", "game", f"kill_seat by {action.by}: {detail}", _action("kill_seat", action.by, detail))
        ]
    if isinstance(action, gaming_day.OVERRIDE_ENTRIES) and isinstance(action, typed.DifferenceAccepted):
        detail = f"{action.spot}; the difference accepted ({action.fault_id}): {action.reason}"
        summary = f"accept_difference by {action.by}: {detail}"
        return [("override", "game", summary, _action("accept_difference", action.by, detail))]
    return []


def _action(action: str, by: str, detail: str) -> dict[str, Any]:
    return {"action": action, "by": by, "detail": detail}


def alert_category(kind: str) -> str:
    if kind in ALERT_CATEGORIES:
        return ALERT_CATEGORIES[kind]
    if kind.startswith(("software_", "release_", "config_")):
        return "software"
    if kind.startswith("clock_"):
        return "clock"
    return "operations"


def _reason_text(reason: typed.Reason | str) -> str:
    if isinstance(reason, typed.Reason):
        return reason.message or reason.code
    return reason


def _pick(payload: Mapping[str, Any], *names: str) -> dict[str, Any]:
    return {name: payload[name] for name in names if name in payload}


def _big_wins(
    settlement: Mapping[str, Any], big_win_cents: int, money: MoneyFormat
) -> list[tuple[str, str, str, dict[str, Any]]]:
    """A settled round's seats that won ``big_win_cents`` or more (the settle output's seats)."""
    found: list[tuple[str, str, str, dict[str, Any]]] = []
    for seat in settlement.get("seats") or []:
        net = seat.get("net")
        if isinstance(net, int) and not isinstance(net, bool) and net >= big_win_cents:
            details = {
                "seat": seat.get("seat"),
                "net_cents": net,
                "wagers": seat.get("wagers") or {},
                "threshold_cents": big_win_cents,
                "game": settlement.get("game"),
                "banking": settlement.get("banking"),
            }
            summary = f"seat {seat.get('seat')} won {money(net)} (threshold {money(big_win_cents)})"
            found.append(("big_win", "game", summary, details))
    return found


def events_of(
    entry: FloorEntry, big_win_cents: int, money: MoneyFormat = DEFAULT_MONEY
) -> list[dict[str, Any]]:
    """The surveillance events of one entry (most entries have none). ``money``: the property's format
    (``PropertySettings.money``), so a summary reads as the property's panels and reports do."""
    p = entry.payload
    # Read as its typed entry (only the kinds watched here are decoded); ``details`` stay the entry's
    # fields as the table wrote them (the event's schema, docs/operations.md "Surveillance").
    read = typed_entry(entry.kind, p) if entry.kind in _WATCHED_KINDS else None
    found: list[tuple[str, str, str, dict[str, Any]]] = []  # (type, category, summary, details)
    if isinstance(read, typed.RoundSettled):
        found.extend(_big_wins(read.settlement, big_win_cents, money))
    elif isinstance(read, typed.PastPosting):
        details = _pick(p, "seat", "wager", "locked_cents", "seen_cents")
        summary = (
            f"seat {read.seat} {read.wager}: {money(read.locked_cents)} locked, "
            f"{money(read.seen_cents)} seen after the lock"
        )
        found.append(("past_posting", "game", summary, details))
    elif isinstance(read, typed.DeadHand):
        where = f"seat {read.seat}" if read.seat is not None else "the whole round"
        summary = f"{where} dead: {_reason_text(read.reason)}"
        found.append(("dead_hand", "game", summary, _pick(p, "seat", "reason")))
    elif isinstance(read, typed.RoundDead):
        found.append(("dead_round", "game", f"round dead: {_reason_text(read.reason)}", _pick(p, "reason")))
    elif isinstance(read, typed.RoundVoided):
        summary = f"round voided by {read.by}: {_reason_text(read.reason)}"
        found.append(("void", "game", summary, _pick(p, "by", "reason")))
    elif read is not None and entry.kind in OPERATOR_KINDS:
        found.extend(_operator_event(read))
    elif isinstance(read, typed.FaultRaised) and read.kind_of_fault not in ALERTS_WITH_THEIR_OWN_EVENT:
        details = _pick(p, "fault_id", "kind", "severity", "device", "reason", "by")
        summary = f"{read.kind_of_fault} ({read.severity}): {_reason_text(read.reason)}"
        found.append(("alert", alert_category(read.kind_of_fault), summary, details))
    elif isinstance(read, typed.SecurityEvent):
        details = _pick(p, "device", "reason", "detail")
        found.append(("security", "security", f"{read.device}: {read.reason}", details))
    return [
        {
            "schema": SCHEMA,
            "event_id": f"{entry.table_id}:{entry.seq}:{n}",
            "type": kind,
            "category": category,
            "table_id": entry.table_id,
            "seq": entry.seq,
            "entry_kind": entry.kind,
            "entry_hash": entry.hash,
            "round_id": entry.round_id,
            "time_utc": entry.time_utc,
            "source": entry.source,
            "summary": summary,
            "details": details,
        }
        for n, (kind, category, summary, details) in enumerate(found)
    ]


def subject_of(table_id: str) -> str:
    return f"{SUBJECT_PREFIX}.{table_id or FLOOR_SUBJECT}"


def floor_alert_category(kind: str) -> str:
    return FLOOR_ALERT_CATEGORIES.get(kind) or alert_category(kind)


def _utc_text(moment: datetime) -> str:
    """As the tables write their times: ISO 8601 in UTC with a Z (the schema's time_utc)."""
    text = moment.astimezone(UTC).isoformat(timespec="microseconds")
    return text.removesuffix("+00:00") + "Z"


@dataclass(frozen=True, slots=True)
class FloorAlert:
    alert_id: int
    raised_utc: datetime
    table_id: str
    seq: int | None  # the entry it names, if any
    stream_seq: int | None  # the message it is about, if any
    kind: str
    severity: str
    message: str
    fault_id: str | None


def alert_event_of(alert: FloorAlert) -> dict[str, Any]:
    """The surveillance event of one alert the floor raised: the event shape of a table's alert
    (type "alert", details with kind, severity, reason, fault_id) with source "floor", no entry hash,
    and an id that is a function of the alert alone."""
    return {
        "schema": SCHEMA,
        "event_id": f"{FLOOR_SOURCE}:{alert.alert_id}",
        "alert_id": alert.alert_id,
        "type": "alert",
        "category": floor_alert_category(alert.kind),
        "table_id": alert.table_id,
        "seq": alert.seq,
        "entry_kind": "floor_alert",
        "entry_hash": None,
        "round_id": None,
        "time_utc": _utc_text(alert.raised_utc),
        "source": FLOOR_SOURCE,
        "summary": f"{alert.kind} ({alert.severity}): {alert.message}",
        "details": {
            "fault_id": alert.fault_id,
            "kind": alert.kind,
            "severity": alert.severity,
            "reason": alert.message,
            "stream_seq": alert.stream_seq,
        },
    }


def events_of_rows(
    rows: Sequence[Sequence[Any]], big_win_cents: int, money: MoneyFormat = DEFAULT_MONEY
) -> list[dict[str, Any]]:
    """Events of ``floor_entries`` rows (table_id, seq, time_text, round_id, source, kind, payload, hash)."""
    out: list[dict[str, Any]] = []
    for table_id, seq, time_text, round_id, source, kind, payload, hash_ in rows:
        entry = FloorEntry(
            str(table_id), int(seq), str(time_text), round_id, str(source), str(kind), payload, str(hash_)
        )
        out.extend(events_of(entry, big_win_cents, money))
    return out


EVENT_COLUMNS = "table_id, seq, time_text, round_id, source, kind, payload, hash"


EVENTS_PER_PASS = 2000  # at most this many entries a pass: a floor catching up publishes in steps
ALERT_COLUMNS = "alert_id, raised_utc, table_id, seq, stream_seq, kind, severity, message, fault_id"


async def publish_floor_alerts(connection: Any, js: Any) -> int:
    """The floor's own alerts not yet marked, published in id order with their ids, then marked (one
    transaction) after every ack. An error leaves them unmarked: the next pass sends them again with
    the same ids, and the stream keeps the first of each."""
    import json as json_module  # noqa: PLC0415

    async with connection.transaction():
        cursor = await connection.execute(
            f"SELECT {ALERT_COLUMNS} FROM floor_alerts a WHERE a.origin = 'floor' AND NOT EXISTS"
            " (SELECT 1 FROM floor_surveillance_alert_marks m WHERE m.alert_id = a.alert_id)"
            " ORDER BY a.alert_id LIMIT %s",
            (EVENTS_PER_PASS,),
        )
        rows = await cursor.fetchall()
    published: list[int] = []
    for row in rows:
        alert = FloorAlert(
            int(row[0]),
            row[1],
            str(row[2]),
            None if row[3] is None else int(row[3]),
            None if row[4] is None else int(row[4]),
            str(row[5]),
            str(row[6]),
            str(row[7]),
            None if row[8] is None else str(row[8]),
        )
        event = alert_event_of(alert)
        body = json_module.dumps(event, sort_keys=True, separators=(",", ":")).encode("utf-8")
        await js.publish(
            subject_of(alert.table_id), body, stream=STREAM, headers={"Nats-Msg-Id": event["event_id"]}
        )
        published.append(alert.alert_id)
    if published:
        async with connection.transaction():
            cursor = connection.cursor()
            await cursor.executemany(
                "INSERT INTO floor_surveillance_alert_marks (alert_id) VALUES (%s) ON CONFLICT DO NOTHING",
                [(alert_id,) for alert_id in published],
            )
    return len(published)


async def publish_pending(
    connection: Any, js: Any, big_win_cents: int, money: MoneyFormat = DEFAULT_MONEY
) -> int:
    """One pass of the publisher: the floor's own alerts not yet marked (publish_floor_alerts), then
    the events of the entries after each table's mark, published in
    order with their ids, then the marks moved (one transaction) after every ack. Returns how many
    events were published. ``connection``: the floor service's (the writer role's, autocommit);
    ``js``: its JetStream context. An error leaves the marks where they were: the next pass sends the
    same events with the same ids, and the stream keeps the first of each."""
    import json as json_module  # noqa: PLC0415

    published_alerts = await publish_floor_alerts(connection, js)
    async with connection.transaction():
        cursor = await connection.execute(
            "SELECT t.table_id, t.last_seq, COALESCE(m.last_seq, 0) FROM floor_tables t"
            " LEFT JOIN floor_surveillance_marks m USING (table_id)"
            " WHERE t.last_seq > COALESCE(m.last_seq, 0)"
        )
        behind = await cursor.fetchall()
    if not behind:
        return published_alerts
    published = published_alerts
    # Every behind table's event entries in one read, each table bounded by its own mark and head as
    # read above (and at most EVENTS_PER_PASS of them), and every mark in one statement: one statement
    # per table and a transaction each were most of the publisher's cost while a floor catches up
    # (docs/floor.md "CPU per message").
    table_ids = [str(table_id) for table_id, _, _ in behind]
    heads = [int(head_seq) for _, head_seq, _ in behind]
    marks = [int(mark_seq) for _, _, mark_seq in behind]
    # The tables as one JSON document ([table, mark, head] each, written by msgspec in C), read back in
    # PostgreSQL: psycopg wrote each array parameter an element at a time in Python (its quoting
    # checked by a regular expression), 3% of the floor service's CPU in catch-up (docs/floor.md
    # "Tenth stop"). The same values, the same statement otherwise.
    async with connection.transaction():
        cursor = await connection.execute(
            f"SELECT {', '.join('e.' + c for c in EVENT_COLUMNS.split(', '))}"
            " FROM jsonb_array_elements(%s::jsonb) AS b"
            " CROSS JOIN LATERAL (SELECT * FROM floor_entries x WHERE x.table_id = b->>0"
            " AND x.seq > (b->>1)::bigint AND x.seq <= (b->>2)::bigint AND x.kind = ANY(%s::text[])"
            " ORDER BY x.seq LIMIT %s) AS e ORDER BY e.table_id, e.seq",
            (_document(zip(table_ids, marks, heads, strict=True)), _EVENT_KINDS_LITERAL, EVENTS_PER_PASS),
        )
        rows = await cursor.fetchall()
    rows_of: dict[str, list[Any]] = {}
    for row in rows:
        rows_of.setdefault(str(row[0]), []).append(row)
    counts: list[int] = []
    throughs: list[int] = []
    for table_id, head_seq in zip(table_ids, heads, strict=True):
        table_rows = rows_of.get(table_id, [])
        count = 0
        for event in events_of_rows(table_rows, big_win_cents, money):
            body = json_module.dumps(event, sort_keys=True, separators=(",", ":")).encode("utf-8")
            await js.publish(
                subject_of(table_id), body, stream=STREAM, headers={"Nats-Msg-Id": event["event_id"]}
            )
            count += 1
        # Every entry up to the table's head is looked at, unless the pass stopped at its limit.
        throughs.append(int(table_rows[-1][1]) if len(table_rows) >= EVENTS_PER_PASS else head_seq)
        counts.append(count)
        published += count
    async with connection.transaction():
        await connection.execute(
            "INSERT INTO floor_surveillance_marks (table_id, last_seq, events_published)"
            " SELECT m->>0, (m->>1)::bigint, (m->>2)::bigint FROM jsonb_array_elements(%s::jsonb) AS m"
            " ON CONFLICT (table_id) DO UPDATE SET last_seq = EXCLUDED.last_seq,"
            " events_published = floor_surveillance_marks.events_published + EXCLUDED.events_published,"
            " updated_utc = clock_timestamp()",
            (_document(zip(table_ids, throughs, counts, strict=True)),),
        )
    return published


def _document(rows: Iterable[tuple[str, int, int]]) -> str:
    return msgspec.json.encode(list(rows)).decode("utf-8")
