"""The floor's per-table checks on their own (controller/floor/checks.py: pure, no servers): a real
journal's messages, as its uplink sends them, folded in order give the table's own state; a gap, a broken
chain, a tampered entry, a fork and a private part against a wrong commitment are each named."""

from __future__ import annotations

import random
from pathlib import Path

import msgspec
import pytest

from controller.engine.outputs import JournalRecord
from controller.floor import checks
from controller.journal import entries as typed
from controller.journal.chain import canonical_json
from controller.journal.kinds import CLOSING_KINDS, ROUND_SETTLED
from controller.journal.recovery import recover
from controller.journal.state import TableState
from controller.journal.store import Journal
from controller.uplink import wire
from controller.uplink.outbox import Outbox
from drivers.events import CardDealt, HandComplete
from tests.engine.test_deal_timeout import locked_table
from tests.journal.scripted import play_round


def _messages(tmp_path: Path) -> tuple[list[wire.EntryMessage], list[wire.PrivateMessage], TableState]:
    with Journal.open(tmp_path / "j.sqlite", "T1", synchronous="OFF") as journal:
        rng = random.Random(11)
        for outcome in ("settled", "dead", "settled"):
            play_round(journal, rng, game="chase-the-flush", outcome=outcome)
        outbox = Outbox("T1")
        entries: list[wire.EntryMessage] = []
        privates: list[wire.PrivateMessage] = []
        for stored in journal.entries():
            for out in outbox.feed(stored):
                decoded = wire.decode(out.body)
                if isinstance(decoded, wire.EntryMessage):
                    entries.append(decoded)
                else:
                    privates.append(decoded)
        return entries, privates, TableState("T1").apply_all(journal.entries())


def test_a_journal_folds_cleanly_to_the_tables_own_state(tmp_path: Path) -> None:
    entries, privates, table_state = _messages(tmp_path)
    projection = checks.TableProjection("T1", state=TableState("T1"))
    for entry in entries:
        assert not checks.is_resend(entry, projection)
        assert checks.chain_problem(projection, entry) is None, entry.seq
        checks.fold_entry(projection, entry)
    assert projection.last_seq == entries[-1].seq
    assert projection.last_hash == entries[-1].hash
    assert projection.state.meters.to_json() == table_state.meters.to_json()
    assert projection.state.phase == table_state.phase
    assert privates  # the settled rounds' parts went out
    for private in privates:
        digest = next(e.private_digest for e in entries if e.seq == private.seq)
        assert checks.private_verdict(private, held=(digest, None)) == "take"
        assert checks.private_verdict(private, held=(digest, private.private_text)) == "duplicate"


def test_each_bad_entry_is_named(tmp_path: Path) -> None:
    entries, privates, _ = _messages(tmp_path)
    projection = checks.TableProjection("T1", state=TableState("T1"))
    checks.fold_entry(projection, entries[0])
    second = entries[1]
    gap = checks.chain_problem(projection, entries[2])
    assert gap is not None
    assert gap.kind == "gap"
    broken = checks.chain_problem(projection, msgspec.structs.replace(second, prev_hash="0" * 64))
    assert broken is not None
    assert broken.kind == "broken_chain"
    tampered = msgspec.structs.replace(second, time_utc="2030-01-01T00:00:00.000000Z")
    problem = checks.chain_problem(projection, tampered)
    assert problem is not None
    assert problem.kind == "bad_hash"
    checks.quarantine_table(projection, tampered, problem)
    assert projection.quarantined()
    assert projection.quarantined_at_seq == entries[0].seq
    assert projection.quarantine_reason == f"bad_hash at entry {second.seq}"

    assert checks.is_resend(entries[0], projection)
    assert checks.resend_problem(entries[0], entries[0].hash) is None
    fork = checks.resend_problem(entries[0], "f" * 64)
    assert fork is not None
    assert fork.kind == "fork"

    private = privates[0]
    wrong = checks.private_verdict(private, held=("0" * 64, None))
    assert isinstance(wrong, checks.Problem)
    assert wrong.kind == "bad_commitment"
    second_part = checks.private_verdict(private, held=("0" * 64, private.private_text + " "))
    assert isinstance(second_part, checks.Problem)
    assert "second, different" in second_part.reason
    orphan = checks.private_verdict(private, held=None)
    assert isinstance(orphan, checks.Problem)
    assert orphan.kind == "private_without_entry"


def test_every_entry_the_engine_writes_fits_the_shapes_the_floor_checks(tmp_path: Path) -> None:
    """``entries.check_shapes`` (what the floor checks beyond each entry's own type) refuses nothing a
    table writes: every game and banking, settled, dead and voided rounds (recovery's void of an
    interrupted round), kill requests, past posting and over-limit refusals."""
    rng = random.Random(5)
    kinds: set[str] = set()
    tables = (("high-card-flush", "house"), ("top-flush", "house"), ("chase-the-flush", "house"),
              ("high-card-flush", "designated-player"))  # fmt: skip
    for game, banking in tables:
        with Journal.open(tmp_path / f"{game}-{banking}.sqlite", "T1", synchronous="OFF") as journal:
            for outcome in ("settled", "dead", "settled", "open_after_lock"):
                play_round(journal, rng, game=game, banking_mode=banking, outcome=outcome,
                           over_limit_rate=0.3, past_post=True, kill_request=True)  # fmt: skip
            recover(journal)  # voids the open round
            for stored in journal.entries():
                typed.check_shapes(stored.entry)
                wire.decode(wire.entry_body(stored.public_json()))
                kinds.add(stored.kind)
    assert {"round_settled", "round_dead", "round_voided", "round_started", "bets_locked"} <= kinds, kinds


def test_the_shapes_refuse_what_the_reducer_cannot_fold() -> None:
    seat = {"seat": 1, "status": "live", "wagers": {"ante": {"stake": 500, "result": "win", "net": 500}},
            "rake": 0, "net": 500}  # fmt: skip
    good = {"settlement": {"banking": "house", "seats": [seat], "banker_net": -500, "rake": 0}}
    typed.check_shapes(typed.decode_public("round_settled", canonical_json(good)))
    for bad in (
        {"settlement": {"seats": ["boom"]}},  # issue 30: a seat that is a string
        {"settlement": {"seats": [{**seat, "net": "500"}]}},
        {"settlement": {"seats": [{**seat, "wagers": {"ante": {"stake": None}}}]}},
        {"settlement": {"seats": [{**seat, "wagers": {"ante": {"stake": 10**16}}}]}},  # past any bigint sum
        {"settlement": {"banker_net": 1.5}},
        {"settlement": {"dead": "yes"}},
    ):
        entry = typed.decode_public("round_settled", canonical_json(bad))
        try:
            typed.check_shapes(entry)
        except typed.EntryError:
            continue
        raise AssertionError(f"not refused: {bad}")


def test_a_rounds_sums_must_fit_the_floors_bigint_columns() -> None:
    """Each amount is bounded, but a round's sums (its handle, its house win: bigint columns of
    floor_rounds) were not: one seat with ten thousand wagers of the largest amount fits the stream's
    1 MB message and sums past 2**63, and PostgreSQL's out-of-range error is the floor's own I/O failing
    to the service (the batch retried for ever, every table frozen). The round's sum is bounded too."""
    wagers = {f"w{number}": {"stake": typed.MAX_SHAPE_AMOUNT_CENTS, "result": "lose",
                             "net": -typed.MAX_SHAPE_AMOUNT_CENTS} for number in range(10_000)}  # fmt: skip
    seat = {"seat": 1, "status": "live", "wagers": wagers, "rake": 0, "net": 0}
    payload = canonical_json({"settlement": {"banking": "house", "seats": [seat], "banker_net": 0}})
    assert len(payload.encode("utf-8")) < 1024 * 1024  # the stream's max_payload: it reaches the floor
    assert typed.MAX_SHAPE_AMOUNT_CENTS * len(wagers) > 2**63 - 1
    entry = typed.decode_public("round_settled", payload)
    with pytest.raises(typed.EntryError, match="sum past"):
        typed.check_shapes(entry)


LONG_ID = "x" * (wire.MAX_ID_CHARS + 1)
STATE = {"machine": "round", "from": "idle", "to": "betting", "trigger": "open_betting"}


@pytest.mark.parametrize(
    ("kind", "payload", "columns", "named"),
    [
        ("state_changed", STATE, {"round_id": LONG_ID}, "round_id"),
        ("state_changed", STATE, {"source": LONG_ID}, "source"),
        # The first too long is the one named: the envelope's round_id before the source, both before
        # the payload's ids.
        ("state_changed", STATE, {"round_id": LONG_ID, "source": LONG_ID}, "round_id"),
        (
            "round_started",
            {"round_id": LONG_ID, "game": "high-card-flush", "banking": {"mode": "house"}, "seats": [1]},
            {"round_id": "R1"},
            "payload round_id",
        ),
        (
            "round_started",
            {"round_id": LONG_ID, "game": "high-card-flush", "banking": {"mode": "house"}, "seats": [1]},
            {"round_id": "R1", "source": LONG_ID},
            "source",
        ),
        ("fault_cleared", {"fault_id": LONG_ID, "by": "max", "reason": "fixed"}, {}, "fault_id"),
        ("fault_acknowledged", {"fault_id": LONG_ID, "by": "max"}, {}, "fault_id"),
    ],
)
def test_an_id_too_long_for_the_floors_indexes_is_refused_by_name(
    kind: str, payload: dict[str, object], columns: dict[str, str], named: str
) -> None:
    """wire.decode's bound on the ids the floor indexes by (``_bounded_ids``): each too long one refused
    with its name, the first in the envelope's order, by the fast path's reader and the reference alike."""
    envelope = {
        "type": "entry", "v": 1, "table_id": "T1", "seq": 1, "time_utc": "2026-11-29T16:30:01.123456Z",
        "round_id": None, "source": "engine", "kind": kind, "version": 2, "payload": payload,
        "private_digest": None, "prev_hash": "0" * 64, "hash": "1" * 64, **columns,
    }  # fmt: skip
    body = canonical_json(envelope).encode()
    for decode in (wire.decode, wire.decode_reference):
        with pytest.raises(wire.BadMessage, match=f"^{named} longer than {wire.MAX_ID_CHARS} characters$"):
            decode(body)


def _honest_entries(tmp_path: Path) -> list[wire.EntryMessage]:
    """Entries of an honest table, as the floor takes them: every game, each round settled, dead (the
    shoe's red light mid-deal) or voided, with seats killed, past-posts (refused and accepted) and
    over-limit raises among them."""
    with Journal.open(tmp_path / "honest.sqlite", "T1", synchronous="OFF") as journal:
        rng = random.Random(23)
        for game in ("high-card-flush", "top-flush", "chase-the-flush"):
            for outcome in ("settled", "dead", "void", "settled"):
                play_round(
                    journal, rng, game=game, outcome=outcome, over_limit_rate=0.3,
                    past_post=rng.random() < 0.5, kill_request=rng.random() < 0.5,
                    accept_past_post=rng.random() < 0.5,
                )  # fmt: skip
        outbox = Outbox("T1")
        return [
            decoded
            for stored in journal.entries()
            for out in outbox.feed(stored)
            if isinstance(decoded := wire.decode(out.body), wire.EntryMessage)
        ]


def test_an_entry_of_a_rounds_play_after_its_close_is_named_and_no_honest_one_is(tmp_path: Path) -> None:
    """``closed_round_problem`` (docs/floor.md "An entry for a round already closed"): none for any entry
    an honest table writes, its rounds' tails after their close included; ``entry_after_close`` for a
    decision, a start or wagers locked in a round already settled and for a second close; none for a card
    of a closed round (the engine journals the rest of a deal cut short, and a dead seat's late card:
    below), nor for the kinds an honest table may write with a closed round's id."""
    entries = _honest_entries(tmp_path)
    projection = checks.TableProjection("T1", state=TableState("T1"))
    closed: dict[str, str] = {}
    after_close_kinds: set[str] = set()
    for entry in entries:
        assert checks.closed_round_problem(projection, entry) is None, (entry.seq, entry.kind, entry.round_id)
        if entry.round_id in closed:
            after_close_kinds.add(entry.kind)
        if entry.kind in CLOSING_KINDS and entry.round_id is not None:
            closed.setdefault(entry.round_id, entry.kind)
        checks.fold_entry(projection, entry)
    assert set(closed.values()) == set(CLOSING_KINDS)  # each way a round closes was there
    assert "state_changed" in after_close_kinds  # the honest tails after a close were judged too

    def forged(kind: str, closed_by: str) -> wire.EntryMessage:
        round_id = next(r for r, k in closed.items() if k == closed_by)
        template = next(e for e in entries if e.kind == kind)
        return msgspec.structs.replace(template, round_id=round_id)

    for kind in ("decision", "round_started", "bets_locked", "round_settled"):
        problem = checks.closed_round_problem(projection, forged(kind, "round_settled"))
        assert problem is not None, kind
        assert problem.kind == "entry_after_close"
        assert f"a {kind} entry for round " in problem.reason
        assert "(round_settled)" in problem.reason
    # A card with a settled round's id: the shoe's late card for a seat dead at the deal's timeout (the
    # test below), journaled before it is judged.
    assert checks.closed_round_problem(projection, forged("card_dealt", "round_settled")) is None
    for closed_by in ("round_dead", "round_voided"):
        for kind in ("round_started", "bets_locked", "round_dead", "round_voided", "round_settled"):
            problem = checks.closed_round_problem(projection, forged(kind, closed_by))
            assert problem is not None, (kind, closed_by)
        for kind in ("card_dealt", "hand_complete"):
            assert checks.closed_round_problem(projection, forged(kind, closed_by)) is None, (kind, closed_by)
    # Kinds an honest table may write with a closed round's id (its tail, a fault's answer, a lapse, a
    # shoe's hand_complete for a position the deal never asked for, journaled before its fault).
    for kind in ("state_changed", "fault_raised", "fault_cleared", "kill_seat_request", "hand_complete"):
        template = next(e for e in entries if e.kind == kind)
        for closed_by in CLOSING_KINDS:
            entry = msgspec.structs.replace(template, round_id=forged(kind, closed_by).round_id)
            assert checks.closed_round_problem(projection, entry) is None, (kind, closed_by)


def test_an_entry_of_a_rounds_play_in_a_round_never_started_is_named_and_no_honest_one_is(
    tmp_path: Path,
) -> None:
    """``round_problem`` (docs/floor.md "An entry for a round never started"): none for any entry an
    honest table writes; ``entry_without_start`` for wagers locked, a decision or a close in a round the
    table never started; none for its cards or the kinds of a round's tail (journaled with a round's id
    the reducer may have forgotten), nor for the round's own start."""
    entries = _honest_entries(tmp_path)
    projection = checks.TableProjection("T1", state=TableState("T1"))
    for entry in entries:
        assert checks.round_problem(projection, entry) is None, (entry.seq, entry.kind, entry.round_id)
        checks.fold_entry(projection, entry)

    def never_started(kind: str) -> wire.EntryMessage:
        template = next(e for e in entries if e.kind == kind)
        return msgspec.structs.replace(template, round_id="R-never-started")

    for kind in ("bets_locked", "decision", *CLOSING_KINDS):
        problem = checks.round_problem(projection, never_started(kind))
        assert problem is not None, kind
        assert problem.kind == "entry_without_start"
        assert f"a {kind} entry for round R-never-started, which the table never started" in problem.reason
    for kind in ("round_started", "card_dealt", "hand_complete", "state_changed", "fault_raised"):
        assert checks.round_problem(projection, never_started(kind)) is None, kind


def test_a_card_the_shoe_reports_for_a_dead_seat_after_the_settlement_raises_no_alert(tmp_path: Path) -> None:
    """An honest table writes a ``card_dealt`` with a settled round's id: a seat still short when the
    shoe went silent is dead (``dead_hand``), the round goes on and settles, and the shoe's late card for
    that seat comes afterwards; the engine journals a card the shoe reports before it judges where it
    belongs (controller/engine/deal.py ``_judge_card``), with the live round's id in every state but idle,
    then faults it. So ``card_dealt`` is not among the kinds refused after a settlement (a review's
    reproduction: before, ``entry_after_close`` for this honest entry)."""
    table, events = locked_table()
    seat3_cards = [
        i for i, event in enumerate(events) if isinstance(event, CardDealt) and event.position == 3
    ]
    late = seat3_cards[-1]
    seat3_complete = next(
        i for i, event in enumerate(events) if isinstance(event, HandComplete) and event.position == 3
    )
    for i, event in enumerate(events):
        if i not in (late, seat3_complete):
            table.event(event)
    table.tick(30.0)  # the shoe silent past the deal's timeout: seat 3 dead, the round goes on
    assert [record.payload["seat"] for record in table.journal("dead_hand")] == [3]
    table.bet(1, "raise", 500)
    table.key("confirm")
    (settled,) = table.journal("round_settled")
    assert settled.round_id is not None
    mark = len(table.outputs)
    table.event(events[late])  # the withheld card, after the settlement
    after = [
        o for o in table.outputs[mark:] if isinstance(o, JournalRecord) and o.round_id == settled.round_id
    ]
    assert "card_dealt" in [record.kind for record in after]

    templates = {entry.kind: entry for entry in _honest_entries(tmp_path)}
    projection = checks.TableProjection("T1", state=TableState("T1"))
    projection.state.closed_rounds[settled.round_id] = ROUND_SETTLED
    for record in after:
        entry = msgspec.structs.replace(templates[record.kind], round_id=record.round_id)
        assert checks.closed_round_problem(projection, entry) is None, record.kind
