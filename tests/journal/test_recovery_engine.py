"""Crash at any journal entry of rounds the real engine plays — decisions included — and recover.

The engine plays a random round (random game and banking, seats, wagers, raises/plays/all-ins and
folds, a random deck); its journal records go to a real journal file cut at a random entry (the crash),
and recovery runs. Two oracles, written independently of controller/journal/recovery.py:

- any cut: the voided round returns exactly what its journal entries say it held (tests/journal/
  wagered.py: the locked wagers plus every raise/play/all-in decided), every wager "returned", net 0;
- a cut between two engine calls (a daemon commits one engine call's records in one transaction): the
  voided round returns exactly what the engine itself returns when a supervisor voids the round at that
  moment (``engine.handle(VoidRound(...))``).

Always: every round closed exactly once, the meters balance, the chain verifies."""

from __future__ import annotations

import random
import tempfile
from collections.abc import Callable
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from controller.engine import JournalRecord, TableConfig, actions
from controller.engine.state import DESIGNATED_PLAYER
from controller.journal import Journal
from controller.journal.meters import compute_meters
from controller.journal.recovery import recover
from controller.journal.verify import verify_chain
from controller.rules.settle import settle_round_json
from tests.engine.table import Table
from tests.journal.wagered import returned_stakes, wagered_in_round

Step = Callable[[Table], object]


def bet(seat: int, wager: str, amount_cents: int) -> Step:
    return lambda table: table.bet(seat, wager, amount_cents)


def fold(seat: int) -> Step:
    return lambda table: table.key("fold_seat", seat)


def round_script(rng: random.Random) -> tuple[TableConfig, list[Step]]:
    """A random round as a list of steps (each one table call, as the daemon would make them)."""
    game = rng.choice(("high-card-flush", "top-flush", "chase-the-flush"))
    dp = game == "high-card-flush" and rng.random() < 0.3
    seats_total = 7 if game == "chase-the-flush" or dp else 6
    config = TableConfig(
        game=game,
        banking_mode=DESIGNATED_PLAYER if dp else "house",
        seats=tuple(range(1, seats_total + 1)),
    )
    steps: list[Step] = []
    candidates = list(range(1, seats_total + 1))
    if dp:
        steps.append(lambda t: t.call(t.engine.handle, actions.DpAccepts(5_000_000, "dealer"), t.now_s))
        candidates.remove(1)  # seat 1 is offered the button first and accepts it
    players = sorted(rng.sample(candidates, rng.randint(1, min(len(candidates), 6))))
    antes = {seat: rng.choice((500, 1000, 2500)) for seat in players}
    steps.append(lambda t: t.start())
    bonus = {"high-card-flush": "flush", "top-flush": "top_flush_bonus", "chase-the-flush": "same_suit_bonus"}
    for seat in players:
        steps.append(bet(seat, "ante", antes[seat]))
        if game == "chase-the-flush":
            steps.append(bet(seat, "xtra_bonus", antes[seat]))
        if rng.random() < 0.5:
            steps.append(bet(seat, bonus[game], 100))
    steps.append(lambda t: t.lock())
    if game == "chase-the-flush":
        # Each seat goes all in on one street (3x, 2x, 1x the ante) or folds on the river.
        plan = {seat: rng.choice(("preflop", "flop", "river", "fold")) for seat in players}
        for street, multiple in (("preflop", 3), ("flop", 2), ("river", 1)):
            for seat in players:
                if plan[seat] == street:
                    steps.append(bet(seat, "all_in", multiple * antes[seat]))
                elif street == "river" and plan[seat] == "fold":
                    steps.append(fold(seat))
            steps.append(lambda t: t.key("confirm"))
    else:
        decision = "raise" if game == "high-card-flush" else "play"
        for seat in players:
            if rng.random() < 0.3:
                steps.append(fold(seat))
            else:  # 1x the ante: within the limit whatever the cards
                steps.append(bet(seat, decision, antes[seat]))
        steps.append(lambda t: t.key("confirm"))
    steps.append(lambda t: t.key("next"))  # payouts done
    return config, steps


def new_table(config: TableConfig, rng_seed: int) -> Table:
    deck = list(range(52))
    random.Random(rng_seed).shuffle(deck)
    return Table(config, deck)


def recovered_void(records: list[JournalRecord], directory: str, name: str) -> tuple[Journal, Path]:
    path = Path(directory) / f"{name}.sqlite"
    journal = Journal.open(path, "T1")
    if records:
        journal.append_many([(r.kind, r.payload, r.round_id, r.source) for r in records])
    recover(journal)
    return journal, path


def check_closed_once_and_balanced(journal: Journal, path: Path) -> None:
    started = [e.round_id for e in journal.entries(kinds=["round_started"])]
    closed = [e.round_id for e in journal.entries(kinds=["round_settled", "round_dead", "round_voided"])]
    assert sorted(map(str, closed)) == sorted(map(str, started))
    assert compute_meters(journal).balanced
    for entry in journal.entries(kinds=["round_voided"]):
        if entry.payload["round"]["seats"]:  # (cut before bets_locked: no seat, nothing was wagered)
            assert settle_round_json(entry.payload["round"]) == entry.payload["settlement"]
    journal.close()
    assert verify_chain(path).ok


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32), cut=st.floats(0, 1), boundary=st.floats(0, 1))
def test_engine_rounds_crashed_at_any_entry_return_every_wager(
    seed: int, cut: float, boundary: float
) -> None:
    rng = random.Random(seed)
    config, steps = round_script(rng)
    table = new_table(config, seed)
    call_ends: list[int] = []  # the journal length after each step (a daemon's transaction boundaries)
    for step in steps:
        step(table)
        call_ends.append(len(table.journal()))
    records = table.journal()
    assert table.journal("round_settled"), "the scripted round must play to the end"
    decisions = [i for i, r in enumerate(records) if r.kind == "decision"]
    assert decisions
    with tempfile.TemporaryDirectory() as directory:
        # 1. A cut at any entry; half the time right after a decision (the case the old recovery missed).
        if cut < 0.5:
            k = decisions[int(cut * 2 * len(decisions)) % len(decisions)] + 1
        else:
            k = int((cut - 0.5) * 2 * (len(records) + 1)) % (len(records) + 1)
        journal, path = recovered_void(records[:k], directory, "cut")
        for voided in journal.entries(kinds=["round_voided"]):
            assert returned_stakes(voided.payload["settlement"]) == wagered_in_round(journal, voided.round_id)
        check_closed_once_and_balanced(journal, path)

        # 2. A cut between two engine calls: recovery returns what the engine's own void returns.
        i = int(boundary * len(steps)) % len(steps)
        replay = new_table(config, seed)
        for step in steps[:i]:
            step(replay)
        journal, path = recovered_void(replay.journal(), directory, "boundary")
        recovered = [
            returned_stakes(e.payload["settlement"]) for e in journal.entries(kinds=["round_voided"])
        ]
        live = replay.engine.view().round
        if live is not None and not live.closed:
            replay.call(
                replay.engine.handle,
                actions.VoidRound("supervisor's void, for comparison", "sue"),
                replay.now_s,
            )
            engine_void = returned_stakes(replay.payload("round_voided")["settlement"])
            assert recovered == [engine_void]
        else:
            assert all(not seats for seats in recovered)  # nothing was locked: nothing to return
        check_closed_once_and_balanced(journal, path)


def test_a_raise_journaled_before_the_crash_is_returned(tmp_path: Path) -> None:
    """The case by hand: seat 1 raised 2x, seat 3 folded (ante and flush bonus on the table), then the
    controller died before the reveal. The void returns the raise and the folded seat's wagers."""
    from tests.engine.table import stack
    from tests.engine.test_rounds import HCF_DEALER, HCF_SEAT1, HCF_SEAT3

    table = Table(TableConfig(), stack(HCF_SEAT1, HCF_SEAT3, HCF_DEALER))
    table.start()
    table.bet(1, "ante", 500)
    table.bet(3, "ante", 1000)
    table.bet(3, "flush", 200)
    table.lock()
    table.bet(1, "raise", 1000)  # 2x with a 5-card flush
    table.key("fold_seat", 3)
    # The dealer's confirm journals seat 1's raise; the crash comes before round_settled is committed.
    table.key("confirm")
    records = table.journal()
    cut = next(i for i, r in enumerate(records) if r.kind == "round_settled")
    journal, path = recovered_void(records[:cut], str(tmp_path), "j")
    (voided,) = journal.entries(kinds=["round_voided"])
    assert returned_stakes(voided.payload["settlement"]) == {
        1: {"ante": 500, "raise": 1000},
        3: {"ante": 1000, "flush": 200},
    }
    seats = voided.payload["round"]["seats"]
    assert seats[1] == {"seat": 3, "cards": [], "wagers": {"ante": 1000, "flush": 200}, "folded": True}
    meters = compute_meters(journal)
    assert meters.returned_cents == 2700
    assert meters.handle_cents == 0
    assert meters.balanced
    check_closed_once_and_balanced(journal, path)
