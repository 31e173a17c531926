"""Journals made by the real round engine, scripted: the readers (recall, recovery, meters, the panel,
the privacy gate) are tested on what the engine really writes, never on imitations of its entries.

``play_round`` rebuilds the engine from the journal exactly as the daemon does at start (the reducer's
state adapted by ``RecoveredState.from_table_state``), plays one round on a seeded deck through the
engine's own entry points and domain events (tests/engine/table.py: a shoe, sensors and keys), and
appends every journal record the engine returned, in order, to the real journal file.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any, Literal

from controller.engine import JournalRecord, TableConfig
from controller.engine import actions as engine_actions
from controller.engine.state import DESIGNATED_PLAYER, HOUSE, RecoveredState
from controller.journal.recovery import rebuild_state
from controller.journal.store import Journal
from controller.rules.games import GAMES
from controller.simulation.autoplay import AutoPlayer, PlaceChips, PressKey
from drivers.events import CardDealt, ShufflerFault
from tests.engine.table import Table

Outcome = Literal["settled", "dead", "void", "open_after_lock", "open_before_lock", "open_mid_deal"]

_BONUS = {
    "high-card-flush": ("flush", "straight_flush"),
    "top-flush": ("top_flush_bonus", "straight_flush_jackpot"),
    "chase-the-flush": ("same_suit_bonus",),
}


def _config(journal: Journal, game: str, banking_mode: str) -> TableConfig:
    spec = GAMES[game]
    dp = banking_mode == "designated-player"
    seats = tuple(range(1, spec.max_players + (2 if dp else 1)))
    return TableConfig(
        table_id=journal.table_id,
        game=game,
        banking_mode=DESIGNATED_PLAYER if dp else HOUSE,
        seats=seats,
        rake={"method": "ii", "amount": 50} if dp else None,
        bonus_cap_cents=200_000 if dp else None,
    )


def _wagers(game: str, rng: random.Random) -> dict[str, int]:
    ante = rng.choice((500, 1000, 2500))
    wagers = {"ante": ante}
    if game == "chase-the-flush":
        wagers["xtra_bonus"] = ante
    for bonus in _BONUS[game]:
        if rng.random() < 0.5:
            wagers[bonus] = rng.choice((100, 500))
    return wagers


def play_round(
    journal: Journal,
    rng: random.Random,
    *,
    game: str = "high-card-flush",
    banking_mode: str = "house",
    outcome: Outcome = "settled",
    players: int | None = None,
    batch: bool = True,
    over_limit_rate: float = 0.0,
    past_post: bool = False,
    kill_request: bool = False,
    accept_past_post: bool = False,
) -> str:
    """Play one round of ``game`` through the real engine and journal it; returns its id. ``outcome``
    says how far it gets (``dead``: the shoe's red light mid-deal; ``open_*``: the journal stops there,
    as if the controller had died). Latched faults left by an earlier round are cleared first (by a
    scripted supervisor, journaled), as the floor would before the next round. ``kill_request``: after
    the deal the dealer's kill_seat key asks to kill the last seat, and a supervisor confirms it.
    ``void``: a supervisor voids the round after the deal. ``accept_past_post``: with ``past_post``,
    the chips stay on the spot and a supervisor accepts the difference (an override) instead."""
    spec = GAMES[game]
    config = _config(journal, game, banking_mode)
    recovered = RecoveredState.from_table_state(rebuild_state(journal))
    deck = list(range(52))
    rng.shuffle(deck)
    table = Table(config, deck, recovered)
    engine = table.engine
    for fault_id in list(engine.view().latched):
        table.call(
            engine.handle,
            engine_actions.ClearFault(fault_id, "script-supervisor", "scripted: checked"),
            table.now_s,
        )

    seats_free = list(config.seats)
    dp_seat: int | None = None
    if config.banking_mode == DESIGNATED_PLAYER:
        offered = engine.view().dp_offer_seat
        dp_seat = offered if offered is not None and offered in seats_free else seats_free[0]
        table.call(engine.handle, engine_actions.DpAccepts(1_000_000, "dealer", dp_seat), table.now_s)
        seats_free.remove(dp_seat)
    count = players if players is not None else rng.randint(1, spec.max_players)
    seats = sorted(rng.sample(seats_free, min(count, len(seats_free))))

    table.start()
    for seat in seats:
        for name, cents in _wagers(game, rng).items():
            table.bet(seat, name, cents)
    if outcome == "open_before_lock":
        return _journal(journal, table, batch, stop_at=None)
    round_id = _round_id(table)
    if outcome == "dead":
        seen = {"cards": 0}

        def red_light(position: int, index: int, card: int) -> list[object] | None:
            seen["cards"] += 1
            if seen["cards"] == 4:
                return [
                    CardDealt("shuffler", position, index, card),
                    ShufflerFault("shuffler", "red_light", position),
                ]
            return None

        table.tamper = red_light
    table.lock()
    round_id = _round_id(table)
    if outcome == "open_after_lock":
        return _journal(journal, table, batch, stop_at="card_dealt")
    if outcome == "open_mid_deal":
        return _journal(journal, table, batch, stop_at="card_dealt", skip=rng.randint(3, 12))
    if outcome == "dead":
        return _journal(journal, table, batch, stop_at=None)
    if outcome == "void":
        table.call(
            engine.handle,
            engine_actions.VoidRound("scripted: shoe misdeal", "script-supervisor"),
            table.now_s,
        )
        return _journal(journal, table, batch, stop_at=None, round_id=round_id)

    # Decisions: the simulated players' legal strategy (controller/simulation/autoplay.py), no walk-aways
    # and no over-limit raises here: the script is about the journal, not the refusals.
    # With ``over_limit_rate`` some raises are over the limit first (refused, then corrected); with
    # ``past_post`` a player adds chips to a locked ante (the table holds; a supervisor has the chips
    # taken back and clears the fault).
    player = AutoPlayer(random.Random(rng.random()), walk_away_rate=0.0, over_limit_rate=over_limit_rate)
    if kill_request and seats:
        table.key("kill_seat", seats[-1])
        table.call(
            engine.handle,
            engine_actions.ConfirmKillSeat(
                seats[-1],
                live.round_id if (live := engine.view().round) else "",
                1,
                "exposed hand",
                "script-supervisor",
            ),
            table.now_s,
        )
    live = engine.view().round
    if past_post and seats and live is not None:
        ante = live.seats[seats[0]].wagers["ante"]
        table.bet(seats[0], "ante", ante + 500, locked=True)
        if not accept_past_post:
            table.bet(seats[0], "ante", ante, locked=True)
        for fault_id in list(engine.view().latched):
            clear: object = (
                engine_actions.AcceptDifference(fault_id, "script-supervisor", "the locked ante stands")
                if accept_past_post
                else engine_actions.ClearFault(fault_id, "script-supervisor", "chips taken back")
            )
            table.call(engine.handle, clear, table.now_s)
    for _ in range(200):  # bounded: a round has at most a few streets of a few seats
        if engine.view().state not in engine.view().definition.decision_states:
            break
        actions = player.next_actions(engine.view())
        for action in actions:
            if isinstance(action, PlaceChips):
                table.bet(action.seat, action.wager, action.amount_cents, locked=True)
            elif isinstance(action, PressKey):
                table.key(action.key, action.seat)
        if not actions:
            table.tick(engine.view().config.decision_timeout_s + 1)
    table.call(engine.handle, engine_actions.PayoutsDone(), table.now_s)
    return _journal(journal, table, batch, stop_at=None, round_id=round_id)


def settled_round_journal(directory: Path, seed: int) -> Path:
    """A journal file in ``directory`` (table T1) holding one settled round of High Card Flush, two
    players: the clean journal the damaged-row tests copy and spoil."""
    path = directory / "journal.sqlite"
    with Journal.open(path, "T1") as journal:
        play_round(journal, random.Random(seed), game="high-card-flush", outcome="settled", players=2)
    return path


def _round_id(table: Table) -> str:
    live = table.engine.view().round
    return live.round_id if live is not None else ""


def _journal(
    journal: Journal,
    table: Table,
    batch: bool,
    *,
    stop_at: str | None,
    skip: int = 0,
    round_id: str | None = None,
) -> str:
    """Append the engine's records (up to, not including, the ``skip``-th ``stop_at`` entry)."""
    records: list[JournalRecord] = []
    seen = 0
    for record in table.journal():
        if stop_at is not None and record.kind == stop_at:
            if seen >= skip:
                break
            seen += 1
        records.append(record)
    if batch:
        journal.append_many(records)
    else:
        for record in records:
            journal.append_many([record])
    found = round_id or next((r.round_id for r in records if r.kind == "round_started" and r.round_id), None)
    return found or journal.indexes.next_round_id()


def payloads(journal: Journal, kind: str) -> list[dict[str, Any]]:
    """Trusted readers' view of one kind's entries (both parts)."""
    return [entry.payload for entry in journal.entries(kinds=[kind])]
