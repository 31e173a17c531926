"""Private parts the floor already holds of rounds it must not show (issue 22), on a real nats-server and
PostgreSQL: journals written by the real engine, sent by the real uplink under the *old* gate (which
counted a void's ``complete`` as the reveal and let a killed seat's refusal through: the copy below),
taken by the real floor service. Then, with today's gate:

- the floor still holds every part it took (``floor_private`` is append-only: nothing is deleted);
- the reporting role cannot read ``floor_private``; ``floor_private_shown`` (and so `floor verify` and
  the floor panel's round page) holds none of a round voided before its reveal, none about a killed
  seat, a Chase round voided after the flop's two community cards and nothing else of it, and a settled
  round's live hands as before;
- the journals verify (`flushtable journal verify`), and `journal show` prints none of those cards.
"""

from __future__ import annotations

import asyncio
import contextlib
import csv
import io
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest

from controller.cli import main as flushtable
from controller.daemon_start import software_record
from controller.engine import JournalRecord, TableConfig
from controller.engine import actions as engine_actions
from controller.engine.state import RecoveredState
from controller.floor.panel import FloorPanelSettings, FloorUser, serve_panel
from controller.floor.service import FloorService
from controller.floor.verify import verify_table
from controller.journal import entries as e
from controller.journal.recovery import rebuild_state
from controller.journal.state import TableState
from controller.journal.state_parts import COMMUNITY_POSITION, Stored
from controller.journal.store import Journal
from controller.simulation.floor.embedded import EmbeddedFloor
from controller.software.verify import VerifiedRelease
from drivers.events import Deal, ShufflerFault
from tests.engine.table import Table, stack
from tests.engine.test_properties import run
from tests.engine.test_rounds import HCF_DEALER, HCF_SEAT1, HCF_SEAT3
from tests.floor.conftest import MakeFloor
from tests.floor.helpers import Running, Tables, expected_messages, floor_problems, last_seq, wait_until
from tests.floor.test_floor_export_typed import CSV_CARD, assert_viewer_csv_is_the_public_part
from tests.floor.test_floor_sessions import WAIT_S, login

PASSWORD = "manager-pw"
JAM = f"jam: card {HCF_SEAT1[0]} at seat 1"
USERS = {
    "mo": FloorUser.with_password("mo", "manager", PASSWORD),
    "vi": FloorUser.with_password("vi", "viewer", PASSWORD),  # shown no private part, even revealed
}


def old_private_visible(self: TableState, stored: Stored) -> bool:
    """main's gate before issue 22, as the uplink applied it: a void's ``complete`` counted as the
    reveal, and a refused decision's limit ignored its seat's death."""
    part = stored.entry.private_part()
    if part is None:
        return True
    round_state = self.round(stored.round_id)
    if round_state is None:
        return False
    reached = round_state.reached_reveal or round_state.status in ("settled", "void")
    public = round_state.status != "dead" and reached
    if isinstance(part, e.CardDealtPrivate):
        if round_state.status == "dead" or part.position in round_state.dead_seats:
            return False
        if public:
            return True
        community = list(round_state.cards.get(COMMUNITY_POSITION, {}).values())
        index = community.index(part.card) if part.card in community else len(community)
        return part.position == COMMUNITY_POSITION and index < round_state.community_visible
    return public and not (part.positions() & round_state.dead_seats)


def played(
    journal: Journal, config: TableConfig, deck: list[int], steps: list[Callable[[Table], Any]]
) -> Table:
    """The real engine, each step's journal records appended as the daemon does (the shoe deals only
    when a step says so: ``deal_many``)."""
    table = Table(config, deck, auto_deal=False)
    deals: list[list[object]] = []
    for step in steps:
        start = len(table.outputs)
        step(table)
        new = table.outputs[start:]
        for out in new:
            if isinstance(out, Deal):
                deals.append(table.shoe_events(out))
        records = [out for out in new if isinstance(out, JournalRecord)]
        if records:
            journal.append_many(records)
        table.deals = deals  # type: ignore[attr-defined]
    return table


def act(name: str, *args: Any) -> Callable[[Table], Any]:
    def step(table: Table) -> Any:
        return run(table, (name, *args), getattr(table, "deals", []))

    return step


def engine(action: object) -> Callable[[Table], Any]:
    return lambda table: table.call(table.engine.handle, action, table.now_s)


def cli(*arguments: str) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        status = flushtable(list(arguments))
    return status, out.getvalue()


@dataclass(frozen=True)
class OldGateFloor:
    """A floor that took the parts the old gate released (``old_gate_floor``), its journals, and the
    rounds the test looks at."""

    floor: EmbeddedFloor
    tables: Tables
    ids: list[str]
    voided_hcf: str
    killed_round: str
    voided_chase: str
    flop: list[str]


# The release T001's daemon verified at its start (its software_verified entry, the first of its journal).
RELEASE = VerifiedRelease("flushtable-test", "ab" * 32, False, "0123456789abcdef", 12, 3)


def old_gate_floor(tmp_path: Path, make_floor: MakeFloor, monkeypatch: pytest.MonkeyPatch) -> OldGateFloor:
    """T001 (a round held during the deal and voided; a round with seat 1's raise refused, seat 1
    killed, settled) and T002 (Chase, the flop turned, voided), played by the real engine and sent by
    the real uplink under the old gate to a real floor service; every entry and part on the floor."""
    ids = ["T001", "T002"]
    floor = make_floor(ids, ack_wait_s=2)
    tables = Tables(tmp_path / "tables", ids)
    hcf = TableConfig(table_id="T001")
    chase = TableConfig(table_id="T002", game="chase-the-flush", seats=(1, 2, 3, 4, 5, 6, 7))
    deck = stack(HCF_SEAT1, HCF_SEAT3, HCF_DEALER)
    # T001: round 1 held during the deal and voided; round 2: seat 1's raise refused over the limit,
    # seat 1 killed, the round settled.
    hold = engine(engine_actions.HoldTable("disputed", "sue"))
    tables.journals["T001"].append_many([software_record(RELEASE)])  # as the daemon's start writes it
    table = played(
        tables.journals["T001"], hcf, deck,
        [act("open", 2, 500), act("deal_many", 9), hold, engine(engine_actions.VoidRound("disputed", "sue"))],
    )  # fmt: skip
    latched = list(table.engine.view().latched)
    assert latched
    recovered = tables.journals["T001"]
    second = Table(hcf, deck, RecoveredState.from_table_state(rebuild_state(recovered)), auto_deal=False)
    steps = [
        *(engine(engine_actions.ClearFault(fault, "sue", "checked")) for fault in latched),
        act("open", 2, 500),
        act("deal_many", 40),
        # The shoe's words name seat 1's first card, with no position (review of issue 22).
        lambda table: table.event(ShufflerFault("shuffler", "jam", None, detail=JAM)),
        act("decide", 1, 3),
        engine(engine_actions.KillSeat(1, "exposed hand", "sue")),
        act("decide", 2, 1),
        act("key", "confirm", None),
    ]
    deals: list[list[object]] = []
    for step in steps:
        start = len(second.outputs)
        second.deals = deals  # type: ignore[attr-defined]
        step(second)
        new = second.outputs[start:]
        deals.extend(second.shoe_events(out) for out in new if isinstance(out, Deal))
        records = [out for out in new if isinstance(out, JournalRecord)]
        if records:
            recovered.append_many(records)
    # T002: Chase, the flop turned, then voided.
    played(
        tables.journals["T002"], chase, list(range(52)),
        [act("open", 2, 500), act("deal_many", 40), act("tick", 31.0), act("deal_many", 40),
         engine(engine_actions.VoidRound("disputed", "sue"))],
    )  # fmt: skip
    # The flop: the first two community cards the shoe dealt (a trusted read of the journal).
    flop = [
        entry.payload["card"]
        for entry in tables.journals["T002"].entries(kinds=["card_dealt"])
        if entry.payload["position"] == COMMUNITY_POSITION
    ][:2]
    rounds = {
        table_id: [str(r.round_id) for r in tables.journals[table_id].entries(kinds=["round_started"])]
        for table_id in ids
    }
    voided_hcf, killed_round = rounds["T001"]
    (voided_chase,) = rounds["T002"]
    kinds = {r: [x.kind for x in tables.journals["T001"].entries(round_id=r)] for r in rounds["T001"]}
    assert "round_voided" in kinds[voided_hcf]
    assert "decision_refused" in kinds[killed_round]
    assert "round_settled" in kinds[killed_round]

    # The old uplink: what it released is on the floor for good.
    monkeypatch.setattr(TableState, "private_visible", old_private_visible)

    async def send() -> None:
        running = Running(floor, tables)
        running.start_uplinks()
        service = FloorService(floor.floor_config())
        running.tasks.append(asyncio.create_task(service.run(running.stop)))
        total = sum(last_seq(tables.journals[t]) for t in ids)
        # What the old uplink releases (the outbox's own rule, under the old gate).
        privates = sum(len(expected_messages(tables.path(t), t)[1]) for t in ids)

        async def all_there() -> bool:
            with psycopg.connect(floor.writer_dsn) as connection:
                entries = connection.execute("SELECT count(*) FROM floor_entries").fetchone()
                parts = connection.execute("SELECT count(*) FROM floor_private").fetchone()
            return entries == (total,) and parts == (privates,)

        await wait_until(all_there, 60, "every entry and released private part on the floor")
        await running.close()

    asyncio.run(send())
    monkeypatch.undo()
    return OldGateFloor(floor, tables, ids, voided_hcf, killed_round, voided_chase, flop)


def test_parts_the_floor_holds_of_voided_rounds_and_killed_seats_are_no_longer_shown(
    tmp_path: Path, make_floor: MakeFloor, monkeypatch: pytest.MonkeyPatch
) -> None:
    scenario = old_gate_floor(tmp_path, make_floor, monkeypatch)
    floor, tables, ids, flop = scenario.floor, scenario.tables, scenario.ids, scenario.flop
    voided_hcf, killed_round, voided_chase = scenario.voided_hcf, scenario.killed_round, scenario.voided_chase
    with psycopg.connect(floor.writer_dsn) as connection:
        held = connection.execute(
            "SELECT e.table_id, e.round_id, e.kind, p.private_text FROM floor_private p "
            "JOIN floor_entries e USING (table_id, seq)"
        ).fetchall()
    held_void = [row for row in held if row[1] == voided_hcf and row[2] == "card_dealt"]
    assert len(held_void) == 8, "the old uplink released the voided round's cards at the void"
    assert any(row[1] == killed_round and row[2] == "decision_refused" for row in held)
    assert len([row for row in held if row[1] == voided_chase and row[2] == "card_dealt"]) > 2

    with psycopg.connect(floor.reporting_dsn) as connection:
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            connection.execute("SELECT count(*) FROM floor_private")
        connection.rollback()
        shown = connection.execute(
            "SELECT e.table_id, e.round_id, e.kind, p.private_text FROM floor_private_shown p "
            "JOIN floor_entries e USING (table_id, seq)"
        ).fetchall()
        for table_id in ids:
            check = verify_table(connection, table_id)
            assert check.ok, check.problem
    assert not [row for row in shown if row[1] == voided_hcf]
    assert not [row for row in shown if row[2] == "decision_refused"]
    assert any(row[1] == killed_round and JAM in (row[3] or "") for row in held), "the old uplink released it"
    assert not [row for row in shown if JAM in (row[3] or "")]
    chase_shown = [json.loads(row[3])["part"]["card"] for row in shown if row[1] == voided_chase]
    assert len(flop) == 2
    assert sorted(chase_shown) == sorted(flop)
    killed_cards = {
        json.loads(row[3])["part"]["card"]
        for row in shown
        if row[1] == killed_round and row[2] == "card_dealt"
    }
    assert killed_cards >= set(HCF_SEAT3) - set(HCF_SEAT1)
    assert not killed_cards & set(HCF_SEAT1)

    # The floor panel's round page (its JSON) for the voided round: every part withheld.
    async def panel() -> list[dict[str, Any]]:
        server = await serve_panel(FloorPanelSettings(floor.reporting_dsn, None, USERS), port=0)
        try:
            async with httpx.AsyncClient(base_url=server.url, timeout=WAIT_S) as client:
                await login(client, "mo", PASSWORD)
                answers = []
                for table_id, round_id in (
                    ("T001", voided_hcf),
                    ("T001", killed_round),
                    ("T002", voided_chase),
                ):
                    response = await client.get(f"/api/tables/{table_id}/rounds/{round_id}")
                    assert response.status_code == 200, response.text
                    answers.append(response.json())
                    page = await client.get(f"/tables/{table_id}/rounds/{round_id}")
                    assert page.status_code == 200
                    for code in HCF_SEAT1 if table_id == "T001" else ():
                        assert f'"card":"{code}"' not in page.text.replace("&#34;", '"').replace(" ", "")
            async with httpx.AsyncClient(base_url=server.url, timeout=WAIT_S) as viewer:
                await login(viewer, "vi", PASSWORD)
                response = await viewer.get(f"/api/tables/T002/rounds/{voided_chase}")
                assert response.status_code == 200, response.text
                answers.append(response.json())
                return answers
        finally:
            await server.stop()

    void_page, killed_page, chase_page, viewer_chase_page = asyncio.run(panel())
    # The manager is shown the chase round's two revealed cards (below); a viewer none of them.
    assert [e["seq"] for e in viewer_chase_page["events"]] == [e["seq"] for e in chase_page["events"]]
    assert not [e for e in viewer_chase_page["events"] if e["private"] is not None]
    cards = [event for event in void_page["events"] if event["kind"] == "card_dealt"]
    assert cards
    assert all(event["private"] is None and event["withheld"] for event in cards)
    refusal = [event for event in killed_page["events"] if event["kind"] == "decision_refused"]
    assert refusal
    assert refusal[0]["private"] is None
    chase_private = [
        json.loads(event["private"])["card"] for event in chase_page["events"] if event["private"]
    ]
    assert len(chase_private) == 2

    # The journals themselves: unchanged, they verify; the product shows none of those cards.
    for table_id in ids:
        path = str(tables.path(table_id))
        # (a journal verifies against its anchor since issue 30: the table's daemon keeps one)
        status, said = cli("journal", "anchor", "--journal", path)
        assert status == 0, said
        status, said = cli("journal", "verify", "--journal", path)
        assert status == 0, said
        status, out = cli("journal", "show", "--json", "--journal", path)
        printed = [json.loads(line) for line in out.splitlines()]
        voided = {voided_hcf, voided_chase}
        leaked = [
            p for p in printed if p["round_id"] in voided and p["kind"] == "card_dealt" and p["private"]
        ]
        assert len(leaked) == (2 if table_id == "T002" else 0)
        assert not [p for p in printed if p["kind"] == "decision_refused" and p["private"]]
    tables.close()


def test_a_viewers_round_csv_holds_every_public_fact_and_no_card(
    tmp_path: Path, make_floor: MakeFloor
) -> None:
    """Over a real floor (the real uplinks and floor service, the floor panel): a settled round of each
    of the helper's four games (a designated player's bank among them). A manager's round CSV is the
    table's own ``recall --csv --round``, byte for byte (as before); a viewer's, shown no private part,
    has the same rows, each with every public column as the manager's (the game, the banking, the dealer's
    qualification, each wager's stake, result and net) and no card nor hand: "withheld" where the
    manager's has them, empty where it has none. Each round's page reads its banking as people do
    ("Designated player, seat 1"), the viewer's as the manager's. Before: the viewer's
    ``game`` was ``None`` and a designated player's table read ``house-banked`` (both taken from the
    settle input, in the private part)."""
    ids = ["T001", "T002", "T003", "T004"]
    floor = make_floor(ids, ack_wait_s=2)
    tables = Tables(tmp_path / "tables", ids)
    for table_id in ids:
        tables.play(table_id, 1)
    settled = {
        table_id: str(tables.journals[table_id].last_entries(1, ["round_settled"])[0].round_id)
        for table_id in ids
    }

    pages: dict[str, tuple[str, str]] = {}  # each round's page, the manager's and the viewer's

    async def scenario() -> dict[str, tuple[str, str]]:
        running = Running(floor, tables)
        running.start_uplinks()
        running.tasks.append(asyncio.create_task(FloorService(floor.floor_config()).run(running.stop)))

        async def on_the_floor() -> bool:
            return not floor_problems(floor, tables)

        await wait_until(on_the_floor, 60, "every entry and released private part on the floor")
        await running.close()
        server = await serve_panel(FloorPanelSettings(floor.reporting_dsn, floor.writer_dsn, USERS), port=0)
        answers: dict[str, tuple[str, str]] = {}
        try:
            async with (
                httpx.AsyncClient(base_url=server.url, timeout=WAIT_S) as manager,
                httpx.AsyncClient(base_url=server.url, timeout=WAIT_S) as viewer,
            ):
                await login(manager, "mo", PASSWORD)
                await login(viewer, "vi", PASSWORD)
                for table_id, round_id in settled.items():
                    path = f"/tables/{table_id}/rounds/{round_id}/csv"
                    full, shown = await manager.get(path), await viewer.get(path)
                    assert full.status_code == shown.status_code == 200, (full.text, shown.text)
                    answers[table_id] = (full.text, shown.text)
                    page = f"/tables/{table_id}/rounds/{round_id}"
                    full, shown = await manager.get(page), await viewer.get(page)
                    assert full.status_code == shown.status_code == 200, (full.text, shown.text)
                    pages[table_id] = (full.text, shown.text)
        finally:
            await server.stop()
        return answers

    answers = asyncio.run(scenario())
    for table_id, (full_csv, viewer_csv) in answers.items():
        round_id = settled[table_id]
        status, recalled = cli(
            "recall", "--journal", str(tables.path(table_id)), "--csv", "--round", round_id
        )
        assert status == 0
        assert full_csv == recalled, table_id  # the manager's CSV: unchanged
        assert CSV_CARD.search(full_csv), table_id  # revealed: the manager's has the cards
        assert not CSV_CARD.search(viewer_csv), table_id
        assert_viewer_csv_is_the_public_part(full_csv, viewer_csv, f"{table_id} {round_id}")
    rows = [row for _full, shown in answers.values() for row in csv.DictReader(io.StringIO(shown))]
    assert {row["game"] for row in rows} == {"High Card Flush", "Top Flush", "Chase the Flush"}
    assert {row["banking"] for row in rows} >= {"house-banked", "designated player seat 1"}
    # The round page's Banking as people read it, the viewer's as the manager's: before, a viewer's
    # page read the settlement's bare "designated-player" (no seat), and the manager's
    # "designated player seat 1".
    for table_id, (full_csv, _viewer_csv) in answers.items():
        banking = next(csv.DictReader(io.StringIO(full_csv)))["banking"]
        words = (
            "House-banked" if banking == "house-banked" else f"Designated player, seat {banking.split()[-1]}"
        )
        for page in pages[table_id]:
            assert f'<span class="label">Banking</span> {words}</div>' in page, (table_id, words)
    tables.close()
