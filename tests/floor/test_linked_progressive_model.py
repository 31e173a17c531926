"""A model-based random test of the linked progressive through the real parts (docs/floor.md "Linked
progressive", "The model-based test"): the floor service and the floor's progressive controller over
a real PostgreSQL and nats-server (the fixtures of tests/floor/), simulated tables with real journals,
uplinks and link clients (controller/simulation/linked_tables.py), driven by a seeded random sequence of
steps: rounds settled (contributions, hits claimed at once), replayed claims, claims for rounds the
controller never saw, two tables' claims sent in the same moment, a supervisor's confirmations (and
their replays), a manager's parameter changes between rounds (refused ones too), and the link lost (the
floor's progressive stopped, a claim made during the loss) with the services restarted.

The model is the pure rules (controller/progressive/model.py, a fold over no store): it is given the
same inputs the test gave the system, in the order the controller recorded them in PostgreSQL, and must
produce exactly the events PostgreSQL holds (every amount to the cent). After every step, on every
channel: the PostgreSQL events' sums (base + Σ increments + Σ resets − Σ meter awards = the meter;
Σ hidden − Σ resets funded + Σ overflow = the reserve), the link row, every table's last broadcast and
every claim answer agree with the model; no award is paid twice, confirmed awards in claim order; the
in-meter = the journals' count of settled Progressive wagers = the tables' own count. At the end every
award is confirmed and the bench's whole check (``check_books``) holds.

Each run is a bounded number of steps (no shrinking: a failure names the seed and the step)."""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg
import pytest

from controller.errors import UserError
from controller.floor.progressive import Link, LinkedProgressive, PostgresStore
from controller.floor.service import FloorService
from controller.journal import entries as e
from controller.names import format_round_id
from controller.progressive import model
from controller.progressive.linked import LinkClient
from controller.progressive.model import Hit, MeterState, ProgressiveParameters, parse_parameters
from controller.progressive.parameters import change_progressive_parameters
from controller.simulation import linked_floor as lf
from controller.simulation.linked_tables import DAY, Claim
from tests.floor.conftest import MakeFloor

SEEDS = (2301, 2302)
STEPS = 16
TABLES = ["T001", "T002", "T003"]
BOUND_S = 120.0  # every wait is on a condition; this only bounds it on a loaded machine
LEVELS = (3, 4, 5, 6, 7, 7)  # the 7-card line twice as likely: the jackpot lock is the interesting part


@dataclass
class Reference:
    """The model: the pure fold, and the inputs the test gave the system that it has not yet seen
    recorded in PostgreSQL."""

    state: MeterState
    contributions: dict[tuple[str, str], int] = field(default_factory=dict)  # (table, round) -> wagers
    claims: dict[tuple[str, str], tuple[tuple[Hit, ...], str]] = field(default_factory=dict)
    confirmations: dict[str, str] = field(default_factory=dict)  # award -> by
    parameters: list[tuple[ProgressiveParameters, str, str]] = field(default_factory=list)
    seen: int = 0  # the PostgreSQL events already checked against the model
    refusals: int = 0
    confirmed_order: list[int] = field(default_factory=list)  # claim numbers, as a supervisor confirmed
    opening: list[e.Entry] = field(default_factory=list)  # the meter's first event, at its base

    def follow(self, stored: list[e.Entry], where: str) -> None:
        """Give the model the inputs in the order PostgreSQL recorded them; its events must be the
        stored ones."""
        index = self.seen
        while index < len(stored):
            first = stored[index]
            expected: list[e.Entry]
            if isinstance(first, e.ProgressiveContribution):
                key = (first.table_id, first.round_id)
                assert key in self.contributions, f"{where}: a contribution never made: {key}"
                expected = model.contribution_events(self.state, *key, self.contributions.pop(key))
            elif isinstance(first, e.ProgressiveAwardClaimed):
                key = (first.table_id, first.round_id)
                assert key in self.claims, f"{where}: awards for a claim never made (or twice): {key}"
                hits, by = self.claims.pop(key)
                expected = model.claim_events(self.state, *key, hits, by=by)
            elif isinstance(first, e.ProgressiveAwardPaid):
                assert first.award_id in self.confirmations, f"{where}: paid unconfirmed {first.award_id}"
                by = self.confirmations.pop(first.award_id)
                expected = model.paid_events(self.state, first.award_id, by=by)
                award = self.state.award(first.award_id)
                assert award is not None
                self.confirmed_order.append(award.claimed.claim_number)
            elif isinstance(first, e.ProgressiveParametersChanged):
                assert self.parameters, f"{where}: a parameter change never made"
                parameters, by, reason = self.parameters.pop(0)
                expected = model.parameter_change_events(self.state, parameters, by=by, reason=reason)
            else:
                raise AssertionError(f"{where}: an event no input explains: {first}")
            got = stored[index : index + len(expected)]
            assert got == expected, f"{where}: PostgreSQL holds {got}, the model {expected}"
            for entry in expected:
                self.state.apply(entry)
            index += len(expected)
        self.seen = index


@dataclass
class Rig:
    floor: Any
    tables: lf.LinkedTables
    linked_config: Any
    stop: asyncio.Event = field(default_factory=asyncio.Event)
    progressive_stop: asyncio.Event = field(default_factory=asyncio.Event)
    service_task: asyncio.Task[None] | None = None
    progressive_task: asyncio.Task[None] | None = None

    def start_service(self) -> None:
        self.stop = asyncio.Event()
        self.service_task = asyncio.create_task(
            FloorService(self.floor.floor_config(batch_size=100)).run(self.stop)
        )

    def start_progressive(self) -> None:
        self.progressive_stop = asyncio.Event()
        self.progressive_task = asyncio.create_task(
            LinkedProgressive(self.linked_config).run(self.progressive_stop)
        )

    async def stop_progressive(self) -> None:
        assert self.progressive_task is not None
        self.progressive_stop.set()
        await asyncio.wait_for(self.progressive_task, BOUND_S)

    async def stop_service(self) -> None:
        assert self.service_task is not None
        self.stop.set()
        await asyncio.wait_for(self.service_task, BOUND_S)


def _stored(floor: Any) -> tuple[list[e.Entry], tuple[int, int, int], int]:
    """The link's events as PostgreSQL holds them, its row (meter, reserve, events), its refusals."""
    with psycopg.connect(floor.reporting_dsn) as connection:
        events = PostgresStore(connection, lf.LINK_ID).load()
        row = connection.execute(
            "SELECT meter_cents, reserve_cents, events FROM floor_progressive_links WHERE link_id = %s",
            (lf.LINK_ID,),
        ).fetchone()
        refusals = connection.execute(
            "SELECT count(*) FROM floor_progressive_refusals WHERE link_id = %s", (lf.LINK_ID,)
        ).fetchone()
    assert row is not None
    assert refusals is not None
    return events, (int(row[0]), int(row[1]), int(row[2])), int(refusals[0])


def _sums(events: list[e.Entry], base_cents: int) -> tuple[int, int]:
    """The meter and the reserve from the events' sums (not the fold): the must-show equations."""
    meter, reserve = base_cents, 0
    for entry in events:
        if isinstance(entry, e.ProgressiveContribution):
            meter += entry.to_meter_cents
            reserve += entry.hidden_cents
        elif isinstance(entry, e.ProgressiveOverflow):
            reserve += entry.overflow_cents
        elif isinstance(entry, e.ProgressiveReset):
            meter += entry.amount_cents
            reserve -= entry.from_reserve_cents
        elif isinstance(entry, e.ProgressiveAwardClaimed) and entry.paid_from == "meter":
            meter -= entry.amount_cents
    return meter, reserve


async def _quiet(rig: Rig, reference: Reference, where: str) -> None:
    """Wait until the system has taken every input (each journal on the floor and counted, every claim
    answered, every table's last broadcast the store's latest), then check every channel."""
    floor, tables = rig.floor, rig.tables
    await lf.wait_for(
        lambda: lf.floor_holds_journals(floor, tables), BOUND_S, f"{where}: the journals counted"
    )
    await lf.wait_for(lambda: tables.pending() == 0, BOUND_S, f"{where}: every claim answered")

    def broadcast_current() -> bool:
        count = _stored(floor)[1][2]
        return all((c.last_meter or {}).get("events") == count for c in tables.clients.values())

    await lf.wait_for(broadcast_current, BOUND_S, f"{where}: every table's broadcast current")
    events, row, refusals = _stored(floor)
    assert events[: len(reference.opening)] == reference.opening, where  # the meter opened at the base
    reference.follow(events, where)
    state = reference.state
    assert not reference.contributions, f"{where}: contributions never recorded: {reference.contributions}"
    unrecorded = {key: tables.clients[key[0]].answers.get(key[1]) for key in reference.claims}
    assert not unrecorded, f"{where}: claims never recorded: {unrecorded}"
    assert not reference.confirmations, f"{where}: confirmations never recorded"
    assert not reference.parameters, f"{where}: parameter changes never recorded"
    # The PostgreSQL events' sums, the link row, the fold and every broadcast: one meter, one reserve.
    assert _sums(events, state.opened_base_cents) == (state.meter_cents, state.reserve_cents), where
    assert row == (state.meter_cents, state.reserve_cents, len(events)), where
    assert state.equations_hold(), where
    for client in tables.clients.values():
        heard = client.last_meter or {}
        assert (heard.get("meter_cents"), heard.get("reserve_cents")) == (
            state.meter_cents,
            state.reserve_cents,
        )
        pending = sorted(str(a["award_id"]) for a in heard.get("pending", []))
        assert pending == sorted(a.claimed.award_id for a in state.pending()), where
    assert refusals == reference.refusals, where
    # Paid once (the unique index says so too), confirmed in the order the controller recorded them.
    paid = [entry.award_id for entry in events if isinstance(entry, e.ProgressiveAwardPaid)]
    assert len(paid) == len(set(paid)), where
    assert reference.confirmed_order == sorted(reference.confirmed_order), where
    # Every claim answer is the awards the store recorded.
    claimed = {entry.award_id: entry for entry in events if isinstance(entry, e.ProgressiveAwardClaimed)}
    for table in tables.tables.values():
        for claim in table.claims:
            answer = tables.clients[table.table_id].answers[claim.round_id]
            assert answer.status in {"recorded", "replayed"}, (where, answer)
            assert answer.answer is not None
            assert [claimed[a.claimed.award_id] for a in answer.answer.awards] == [
                a.claimed for a in answer.answer.awards
            ]
    # The in-meter: the controller's count = the journals' = the tables' own.
    counted = sum(entry.wagers for entry in events if isinstance(entry, e.ProgressiveContribution))
    journals = sum(lf.journal_wagers(tables.directory / f"{t}.sqlite") for t in tables.ids)
    assert counted == journals == sum(t.wagers_settled for t in tables.tables.values()), where
    assert state.in_meter_cents == counted * 100, where


def _play(
    reference: Reference, tables: lf.LinkedTables, table_id: str, rng: random.Random, *, hit: bool
) -> Claim | None:
    table = tables.tables[table_id]
    seats = rng.randint(1, 7)
    hits: list[Hit] = []
    if hit:
        for seat in rng.sample(range(1, seats + 1), rng.randint(1, min(3, seats))):
            hits.append(Hit(seat, rng.choice(LEVELS)))
    before = table.wagers_settled
    claim = table.play_round(seats, hits)
    wagers = table.wagers_settled - before
    if wagers:
        reference.contributions[(table_id, _round_id(table_id, table.rounds))] = wagers
    if claim is not None:
        reference.claims[(table_id, claim.round_id)] = (claim.hits, "engine")
    return claim


def _round_id(table_id: str, number: int) -> str:
    return format_round_id(table_id, DAY, number)


async def _answered(client: LinkClient, claim: Claim) -> None:
    answer = await client.claim(claim.round_id, claim.hits, through_seq=claim.through_seq)
    if answer.pending:  # the floor said wait, or no answer within the bound: the client asks again
        await lf.wait_for(
            lambda: claim.round_id in client.answers, BOUND_S, f"claim {claim.round_id} answered"
        )


async def _confirm(client: LinkClient, award_id: str, by: str) -> str:
    """A supervisor's confirmation, asked again while the link says it is down (bounded)."""
    for _attempt in range(int(BOUND_S / 0.1)):
        try:
            return str((await client.confirm_paid(award_id, by=by))["status"])
        except UserError as error:
            if "link is down" not in str(error):
                raise
        await asyncio.sleep(0.1)
    raise AssertionError(f"the confirmation of {award_id} went unanswered for {BOUND_S} s")


def _new_parameters(state: MeterState, rng: random.Random, *, tight_limit: bool) -> dict[str, Any]:
    """A manager's sensible change (unit and paytable kept: the tables' spots and paytable); a tight
    limit (just over the meter) makes the next contributions overflow into the reserve."""
    reset = rng.choice((10_000, 12_000))
    limit = max(reset, state.meter_cents) + 20 if tight_limit else rng.choice((None, 200_000))
    return {"unit_cents": 100, "base_cents": 10_000, "reset_cents": reset,
            "increment_percent": rng.choice((10, 15, 20, 25)), "hidden_percent": rng.choice((0, 2, 5)),
            "limit_cents": limit, "paytable": "progressive"}  # fmt: skip


REFUSED_PARAMETERS = (
    ({"reset_cents": 9_000}, "progressive.reset_cents: 9000 is below the base"),
    ({"increment_percent": 101}, "progressive.increment_percent: 101% is over 100%"),
    ({"limit_cents": 11_000}, "is below the reset"),
    ({"unit_cents": 0}, "progressive.unit_cents: a unit of 0 is no wager"),
)


async def _run(tmp_path: Path, make_floor: MakeFloor, seed: int) -> None:
    rng = random.Random(seed)
    floor = make_floor(TABLES, ack_wait_s=2)
    parameters = lf.default_parameters()
    linked_config = lf.linked_config_of(
        lf.write_spec(tmp_path / "floor.toml", floor, TABLES, parameters.to_json())
    )
    tables = lf.LinkedTables(floor, tmp_path / "tables", list(TABLES), parameters)
    rig = Rig(floor, tables, linked_config)
    opening = model.open_events(lf.LINK_ID, parameters, by="floor")
    reference = Reference(model.fold(opening), seen=len(opening), opening=opening)
    rig.start_service()
    rig.start_progressive()
    tables.start()
    step_names = ("round", "round", "round", "replay", "unknown", "pair", "confirm", "parameters", "outage")
    try:
        await lf.wait_for(tables.all_up, BOUND_S, "every link up")
        await _quiet(rig, reference, f"seed {seed} start")
        # Every kind of step once, the rest drawn at random, in a random order.
        kinds = list(dict.fromkeys(step_names))  # in a fixed order (a set's depends on the hash seed)
        plan = [*kinds, *(rng.choice(step_names) for _ in range(STEPS - len(kinds)))]
        rng.shuffle(plan)
        done: Counter[str] = Counter()
        for step, name in enumerate(plan):
            done[name] += 1
            where = f"seed {seed} step {step} ({name})"
            table_id = rng.choice(TABLES)
            client = tables.clients[table_id]
            if name == "round":
                claim = _play(reference, tables, table_id, rng, hit=rng.random() < 0.6)
                if claim is not None:  # claimed at once: the floor may not hold the round yet (wait)
                    await _answered(client, claim)
            elif name == "replay":
                made = [(t, c) for t in TABLES for c in tables.tables[t].claims]
                if made:
                    owner, claim = rng.choice(made)
                    first = tables.clients[owner].answers.pop(claim.round_id)
                    await _answered(tables.clients[owner], claim)
                    again = tables.clients[owner].answers[claim.round_id]
                    assert again.status == "replayed", (where, again)
                    assert first.answer is not None
                    assert again.answer is not None
                    assert [a.claimed for a in again.answer.awards] == [
                        a.claimed for a in first.answer.awards
                    ]
            elif name == "unknown":
                table = tables.tables[table_id]
                if table.journal.last_entry() is None:  # a claim names an entry of the table's journal
                    _play(reference, tables, table_id, rng, hit=False)
                last = table.journal.last_entry()
                round_id = _round_id(table_id, 900_000 + step)
                answer = await client.claim(
                    round_id, [Hit(1, 7)], through_seq=0 if last is None else last.seq
                )
                if answer.pending:  # the floor did not yet hold the table's journal through that entry
                    await lf.wait_for(lambda r=round_id, c=client: r in c.answers, BOUND_S, "the refusal")
                    answer = client.answers[round_id]
                assert answer.status == "refused", (where, answer)
                assert answer.reason == (
                    f"progressive: claim for round {round_id} at table {table_id} refused: the controller "
                    "saw no Progressive wagers contributed for that round"
                )
                reference.refusals += 1
            elif name == "pair":  # two tables' hits claimed in the same moment: paid in the order taken
                first_id, second_id = rng.sample(TABLES, 2)
                claims = [_play(reference, tables, t, rng, hit=True) for t in (first_id, second_id)]
                await lf.wait_for(
                    lambda: lf.floor_holds_journals(floor, tables), BOUND_S, "the rounds counted"
                )
                pair = zip((first_id, second_id), claims, strict=True)
                await asyncio.gather(*(_answered(tables.clients[t], c) for t, c in pair if c is not None))
            elif name == "confirm":
                pending = sorted(reference.state.pending(), key=lambda a: a.claimed.claim_number)
                for award in pending[: rng.randint(1, 2)]:
                    by = rng.choice(("sup-ann", "sup-bob"))
                    reference.confirmations[award.claimed.award_id] = by
                    owner_client = tables.clients[award.claimed.table_id]
                    status = await _confirm(owner_client, award.claimed.award_id, by)
                    assert status in {"paid", "replayed"}, (where, status)  # replayed: asked again
                    if rng.random() < 0.5:
                        assert await _confirm(owner_client, award.claimed.award_id, "sup-cy") == "replayed", (
                            where
                        )
            elif name in {"parameters", "outage"}:
                # The link lost: the floor's progressive stops (and, for an outage, the floor service); a
                # round's hit is claimed during the loss; a manager may change the parameters between
                # rounds meanwhile; everything started again.
                claim = _play(reference, tables, table_id, rng, hit=True) if name == "outage" else None
                await rig.stop_progressive()
                if name == "outage":
                    await rig.stop_service()
                    if claim is not None:
                        assert (
                            await client.claim(claim.round_id, claim.hits, through_seq=claim.through_seq)
                        ).pending
                    for _ in range(
                        rng.randint(0, 2)
                    ):  # rounds during the loss (refused at the lock once seen)
                        player = rng.choice(TABLES)
                        during = _play(reference, tables, player, rng, hit=rng.random() < 0.5)
                        if during is not None:  # a hit whose wagers were taken: claimed, kept pending
                            tables.clients[player].submit(
                                during.round_id, during.hits, through_seq=during.through_seq
                            )
                if name == "parameters" or rng.random() < 0.5:
                    await _change_parameters(rig, reference, rng, where, tight_limit=name == "parameters")
                if name == "outage":
                    rig.start_service()
                rig.start_progressive()
            await _quiet(rig, reference, where)
        # The end: every award confirmed (in order), every claim replayed, the bench's whole check.
        for award in sorted(reference.state.pending(), key=lambda a: a.claimed.claim_number):
            reference.confirmations[award.claimed.award_id] = "sup-end"
        await lf.confirm_all(floor, tables, by="sup-end", timeout_s=BOUND_S)
        await lf.replay_claims(floor, tables, BOUND_S)
        await _quiet(rig, reference, f"seed {seed} end")
        assert not reference.state.pending()
        books = lf.check_books(floor, tables)
        assert books["problems"] == [], books
        # Each run took every kind of step; these seeds also hit the jackpot lock and the limit.
        state = reference.state
        print(f"seed {seed}: steps {dict(done)}; awards {len(state.awards)}, resets {state.resets}, "
              f"overflow {state.overflow_cents}, changes {state.changes}, "
              f"refusals {reference.refusals}")  # fmt: skip
        assert set(done) == set(step_names), (seed, done)
        assert state.resets >= 1, (seed, done)
        assert state.overflow_cents > 0, (seed, done)
    finally:
        await tables.close()
        rig.stop.set()
        rig.progressive_stop.set()
        await asyncio.gather(
            *(t for t in (rig.service_task, rig.progressive_task) if t), return_exceptions=True
        )


async def _change_parameters(
    rig: Rig, reference: Reference, rng: random.Random, where: str, *, tight_limit: bool
) -> None:
    """A manager's change between rounds through the controller's one function (the floor's progressive
    is stopped: no round is being counted), and one refused change that records nothing."""
    dsn: str = rig.linked_config.dsn
    connection = await asyncio.to_thread(lambda: psycopg.connect(dsn, autocommit=True))
    try:
        link = await asyncio.to_thread(Link, rig.linked_config.links[0], connection)
        before = link.store.events
        requested = _new_parameters(link.controller.state, rng, tight_limit=tight_limit)
        bad, line = rng.choice(REFUSED_PARAMETERS)
        with pytest.raises(UserError) as refused:
            change_progressive_parameters(link.controller, {**requested, **bad}, by="mgr-mo", role="manager",
                                          round_in_play=False)  # fmt: skip
        assert line in str(refused.value), (where, str(refused.value))
        assert "\n" not in str(refused.value)
        assert link.store.events == before
        changed = parse_parameters(requested)
        if changed != link.controller.state.parameters:
            reference.parameters.append((changed, "mgr-mo", "between rounds"))
            change_progressive_parameters(link.controller, requested, by="mgr-mo", role="manager",
                                          round_in_play=False, reason="between rounds")  # fmt: skip
    finally:
        await asyncio.to_thread(connection.close)


@pytest.mark.parametrize("seed", SEEDS)
def test_random_sequences_keep_the_linked_books(tmp_path: Path, make_floor: MakeFloor, seed: int) -> None:
    asyncio.run(_run(tmp_path, make_floor, seed))
