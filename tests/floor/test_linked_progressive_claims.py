"""The linked progressive's claims and link on the real servers, no kill (docs/floor.md "Linked
progressive"): a claim for a round the controller never saw contributions for is refused in one line
and recorded; a replayed claim gets its first answer and records nothing; a confirmation is recorded
once; a claim naming another table, or not JSON, is refused; a table cannot claim on another table's
subject (the server's permissions); link lost refuses the Progressive wagers at the next lock and
accepts them again once the link is back, the link's bound measured on an injected clock."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import nats.errors
import psycopg
import pytest
from nats.aio.msg import Msg

from controller.config.resolved import UplinkConfig
from controller.floor.progressive import LinkedProgressive, claim_subject
from controller.floor.service import FloorService
from controller.progressive.linked import LinkClient, LinkConfig, LinkedClaim
from controller.progressive.model import Hit
from controller.simulation import linked_floor as lf
from controller.simulation.floor.embedded import EmbeddedFloor
from tests.floor.conftest import MakeFloor


class FakeClock:
    def __init__(self) -> None:
        self.now_s = 1000.0

    def __call__(self) -> float:
        return self.now_s


def test_the_link_is_lost_without_a_meter_within_the_bound() -> None:
    clock = FakeClock()
    client = LinkClient(
        LinkConfig(
            "L1",
            "T001",
            UplinkConfig(("tls://127.0.0.1:1",), "S1", "table-T001", "pw", Path("ca.pem")),
            link_timeout_s=3,
        ),
        clock=clock,
    )
    assert client.link_state() == client.link_state()
    assert not client.link_state().up
    assert client.link_state().reason == "progressive link lost: no meter from the floor yet"
    meter = {"meter_id": "L1", "meter_cents": 10_000, "reserve_cents": 0, "unit_cents": 100, "pending": []}
    client._heard(Msg(None, subject="progressive.L1.meter", data=json.dumps(meter).encode()))  # type: ignore[arg-type]
    assert client.link_state().up
    clock.now_s += 3.0
    assert client.link_state().up  # at the bound still up
    clock.now_s += 0.01
    state = client.link_state()
    assert not state.up
    assert state.reason == "progressive link lost: no meter from the floor for over 3 s"
    client._heard(Msg(None, subject="progressive.L1.meter", data=json.dumps(meter).encode()))  # type: ignore[arg-type]
    assert client.link_state().up
    # A claim the floor answers "wait" (it does not hold the round yet) is an answer: the link is up; a
    # request that went unanswered for the bound is a lost link until a request is answered again.
    client.submit("R1", [Hit(1, 7)], through_seq=3)
    clock.now_s += 10
    client._heard(Msg(None, subject="progressive.L1.meter", data=json.dumps(meter).encode()))  # type: ignore[arg-type]
    assert client.link_state().up
    client.unanswered_since_s = clock.now_s
    assert client.link_state().reason == "progressive link lost: a claim went unanswered for 3 s"


def test_claims_refusals_replays_and_the_link_at_the_lock(tmp_path: Path, make_floor: MakeFloor) -> None:
    floor = make_floor(["T001", "T002"])
    parameters = lf.default_parameters()

    async def scenario() -> None:
        stop = asyncio.Event()
        assert floor.nats is not None
        assert floor.tls is not None
        service = FloorService(floor.floor_config(batch_size=100))
        linked_config = lf.linked_config_of(lf.write_spec(tmp_path / "floor.toml", floor, ["T001", "T002"],
                                                          parameters.to_json()))  # fmt: skip
        progressive = LinkedProgressive(linked_config)
        tasks = [asyncio.create_task(service.run(stop))]
        tasks.append(asyncio.create_task(progressive.run(stop)))
        tables = lf.LinkedTables(floor, tmp_path / "tables", ["T001", "T002"], parameters)
        tables.start()
        try:
            await lf.wait_for(tables.all_up, 60, "the links up")
            t1 = tables.tables["T001"]
            c1 = tables.clients["T001"]
            claim = t1.play_round(4, [Hit(2, 7), Hit(3, 3)])
            assert claim is not None
            first = await _answered(c1, claim.round_id, claim.hits, claim.through_seq)
            assert first.status == "recorded"
            assert first.answer is not None
            assert [a.claimed.seat for a in first.answer.awards] == [2, 3]
            jackpot = first.answer.awards[0].claimed
            assert jackpot.amount_cents == 10_000 + 4 * 20  # the meter with this round's increments
            # A replay: the first answer, nothing recorded.
            events = _count(floor, "SELECT count(*) FROM floor_progressive_events")
            del c1.answers[claim.round_id]
            again = await c1.claim(claim.round_id, claim.hits, through_seq=claim.through_seq)
            assert again.status == "replayed"
            assert again.answer is not None
            assert [a.claimed for a in again.answer.awards] == [a.claimed for a in first.answer.awards]
            assert _count(floor, "SELECT count(*) FROM floor_progressive_events") == events
            # A confirmation recorded once.
            paid = await c1.confirm_paid(jackpot.award_id, by="sup-ann")
            assert paid["status"] == "paid"
            assert (await c1.confirm_paid(jackpot.award_id, by="sup-bob"))["status"] == "replayed"
            paid_query = (
                "SELECT count(*) FROM floor_progressive_events "
                "WHERE kind = 'progressive_award_paid' AND award_id = %s"
            )
            assert _count(floor, paid_query, jackpot.award_id) == 1
            # A round the controller never saw contributions for: its Progressive wagers refused at the
            # lock (the link made to look lost on this table), then a claim for it anyway.
            c1.last_meter_s = -1e9
            assert not c1.link_state().up
            refused_round = t1.play_round(3, [Hit(1, 7)])
            assert refused_round is None
            assert t1.refused_rounds == 1
            await lf.wait_for(
                lambda: lf.floor_holds_journals(floor, tables), 60, "the floor holding the journals"
            )
            await lf.wait_for(lambda: c1.link_state().up, 60, "the next broadcast")  # the link back:
            assert t1.play_round(2) is None
            assert t1.refused_rounds == 1
            last = t1.journal.last_entry()
            assert last is not None
            round_id = f"RT001-20261205-{t1.rounds - 1:06d}"
            refused = await c1.claim(round_id, [Hit(1, 7)], through_seq=last.seq - 3)
            assert refused.status == "refused"
            assert refused.reason == (
                f"progressive: claim for round {round_id} at table T001 refused: the controller saw no "
                "Progressive wagers contributed for that round"
            )
            assert (
                _count(floor, "SELECT count(*) FROM floor_progressive_refusals WHERE round_id = %s", round_id)
                == 1
            )
            assert _count(floor, "SELECT count(*) FROM floor_alerts WHERE kind = 'progressive_refused'") == 1
            # Bad input: another table named in the body; not JSON; another table's subject.
            client = c1._client
            assert client is not None
            body = json.dumps({"table_id": "T002", "round_id": "X", "hits": [{"seat": 1, "run_length": 7}],
                               "through_seq": 1}).encode()  # fmt: skip
            reply = json.loads((await client.request(claim_subject("L1", "T001"), body, timeout=30)).data)
            assert reply["status"] == "refused"
            assert reply["reason"] == "the claim names table 'T002', not its sender T001"
            reply = json.loads((await client.request(claim_subject("L1", "T001"), b"\xff{", timeout=30)).data)
            assert reply == {
                **reply,
                "status": "refused",
                "reason": "a claim is a JSON object; this is not JSON",
            }
            # The server refuses the publish on another table's subject: no answer ever comes.
            with pytest.raises(nats.errors.TimeoutError):
                await client.request(claim_subject("L1", "T002"), body, timeout=2)
            books = lf.check_books(floor, tables)
            assert books["problems"] == [], books
            # A table's settlement that cannot be counted: refused, recorded, alerted, nothing counted.
            t2 = tables.tables["T002"]
            meter_before = _count(floor, "SELECT meter_cents FROM floor_progressive_links")
            for number, settled_progressive in (
                (901, {"unit_cents": 100, "contributions": {"wagers": 9}}),
                (902, {"unit_cents": 50, "contributions": {"wagers": 2}}),
                (903, {"unit_cents": 100, "contributions": {"wagers": "7"}}),
            ):
                round_id = f"RT002-20261205-{number:06d}"
                started = {
                    "round_id": round_id,
                    "game": "top-flush",
                    "banking": {"mode": "house"},
                    "seats": [1],
                }
                t2.journal.append("round_started", started, round_id=round_id, source="engine")
                settled = {"settlement": {"progressive": settled_progressive}}
                t2.journal.append("round_settled", settled, round_id=round_id, source="engine")
            await lf.wait_for(lambda: lf.floor_holds_journals(floor, tables), 60, "the rounds read")
            reasons = _rows(floor, "SELECT reason FROM floor_progressive_refusals WHERE table_id = 'T002' "
                                   "ORDER BY refusal_id")  # fmt: skip
            assert reasons == [
                "contribution of round RT002-20261205-000901 refused: progressive: 9 wagers in round "
                "RT002-20261205-000901 at table T002 is an unreasonable contribution (at most 7); nothing "
                "was counted",
                "contribution of round RT002-20261205-000902 refused: the round's progressive unit is 50, "
                "not the link's 100",
                "contribution of round RT002-20261205-000903 refused: the settlement's progressive."
                "contributions.wagers is no count: '7'",
            ]
            assert _count(floor, "SELECT meter_cents FROM floor_progressive_links") == meter_before
            assert _count(floor, "SELECT count(*) FROM floor_alerts WHERE table_id = 'T002' "
                                 "AND kind = 'progressive_refused'") == 3  # fmt: skip
        finally:
            await tables.close()
            stop.set()
            await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), 60)

    asyncio.run(scenario())


async def _answered(
    client: LinkClient, round_id: str, hits: tuple[Hit, ...], through_seq: int
) -> LinkedClaim:
    """Ask until answered (the floor may not hold the round's settlement yet: pending, asked again)."""
    answer = await client.claim(round_id, hits, through_seq=through_seq)
    await lf.wait_for(lambda: round_id in client.answers, 60, "the claim answered")
    return client.answers[round_id] if answer.pending else answer


def _rows(floor: EmbeddedFloor, query: str) -> list[str]:
    with psycopg.connect(floor.reporting_dsn) as connection:
        return [str(row[0]) for row in connection.execute(query).fetchall()]


def _count(floor: EmbeddedFloor, query: str, *args: object) -> int:
    with psycopg.connect(floor.reporting_dsn) as connection:
        row = connection.execute(query, args).fetchone()
    return 0 if row is None else int(row[0])


def test_the_floor_files_progressive_is_checked_one_line_each(tmp_path: Path) -> None:
    from controller.errors import UserError
    from controller.floor.progressive_config import load_linked_config
    from controller.floor.service import FloorConfig

    floor = FloorConfig(("tls://127.0.0.1:4222",), "floor-reader", "pw", tmp_path / "ca.pem", "dbname=floor")
    (tmp_path / "p.pw").write_text("secret\n")
    good = (
        '[progressive]\npassword_file = "p.pw"\n[progressive.links.MAIN]\ntables = ["T01", "T02"]\n'
        "unit_cents = 100\nbase_cents = 10000\nreset_cents = 12000\nincrement_percent = 10\n"
        "hidden_percent = 2\n"
    )
    path = tmp_path / "floor.toml"
    path.write_text(good)
    linked_config = load_linked_config(path, floor)
    assert linked_config is not None
    assert linked_config.links[0].tables == ("T01", "T02")
    assert linked_config.broadcast_interval_s == 0.5
    refusals = {
        good.replace("reset_cents = 12000", "reset_cents = 9000"): (
            "progressive.links.MAIN.reset_cents: 9000 is below the base (10000); the meter never restarts "
            "below where it started"
        ),
        good.replace("increment_percent = 10", "increment_percent = 101"): (
            "progressive.links.MAIN.increment_percent: 101% is over 100%"
        ),
        good.replace("unit_cents = 100", "unit_cents = 0"): (
            "progressive.links.MAIN.unit_cents: a unit of 0 is no wager; the unit must be at least 1 cent"
        ),
        good + "limit_cents = 11000\n": (
            "progressive.links.MAIN.limit_cents: 11000 is below the reset (12000); the meter could not "
            "restart under its own limit"
        ),
        good.replace('password_file = "p.pw"', 'password_file = "p.pw"\nbroadcast_interval_s = 2'): (
            "progressive.broadcast_interval_s: from 0.05 to 1 (the meter is broadcast at least once a "
            "second), not 2"
        ),
        good.replace(
            '"T01", "T02"', '"T01", "T01"'
        ): "progressive.links.MAIN.tables: table T01 is already on link MAIN",
        good.replace("[progressive.links.MAIN]", '[progressive.links."M.*"]'): (
            "progressive.links.M.*: a link's name is 1 to 32 letters, digits or _ (it is a subject token)"
        ),
        # A final line break is in no table id nor NATS user name (both reach subjects and log lines).
        good.replace('"T01", "T02"', '"T01", "T02\\n"'): (
            "progressive.links.MAIN.tables: a list of table ids, not ['T01', 'T02\\n']"
        ),
        good.replace('password_file = "p.pw"', 'user = "floor-progressive\\n"\npassword_file = "p.pw"'): (
            "progressive.user: a NATS user name, not 'floor-progressive\\n'"
        ),
        good.replace("password_file", "pasword_file"): (
            "progressive.pasword_file: unknown key (known: user, password_file, broadcast_interval_s, links)"
        ),
    }
    for text, line in refusals.items():
        path.write_text(text)
        with pytest.raises(UserError) as refused:
            load_linked_config(path, floor)
        assert str(refused.value) == f"{path}: {line}"
    # A link's name with a final line break: refused (its key path shows the key as written).
    path.write_text(good.replace("[progressive.links.MAIN]", '[progressive.links."MAIN\\n"]'))
    with pytest.raises(UserError, match="a link's name is 1 to 32 letters, digits or _"):
        load_linked_config(path, floor)
