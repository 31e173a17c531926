"""The designated player's bank stays on the felt (issue 13: a path by which a covered seat could have
gone short live). Coverage at the lock and the payout count on the bank the DP posted; when that bank
was posted on the bank spot (spot 7), at the accept or before the lock (a keyed or panel-accepted bank
whose chips are placed after), and the DP takes chips back before the reveal, the bank on the felt
is short of what the settlement pays. Before the lock the lock is refused until the bank is back; after
it, the bank spot dropping is past-posting the bank: journaled, the table held for a supervisor."""

from __future__ import annotations

from controller.engine import TableConfig
from controller.engine import actions as a
from controller.engine.bets import BANK_SPOT
from drivers.events import BetChanged, DpBankKeyed, ShowText
from tests.engine.table import Table, stack


def dp_table() -> Table:
    return Table(TableConfig(banking_mode="designated-player", min_bank_cents=10_000), stack())


def bank(table: Table, seat: int, cents: int) -> None:
    table.event(BetChanged("sensors", seat, BANK_SPOT, cents, cents // 1000, False))


def accepted_on_the_spot(cents: int = 30_000) -> Table:
    table = dp_table()
    bank(table, 1, cents)
    table.key("dp_accepts")
    table.start()
    table.bet(2, "ante", 500)
    return table


def test_the_lock_is_refused_while_the_dps_bank_spot_holds_less_than_its_posted_bank() -> None:
    table = accepted_on_the_spot()
    bank(table, 1, 25_000)  # the DP takes 50.00 back before the lock
    outs = table.lock()
    reason = "seat 1's bank spot holds 250.00, less than the bank 300.00 it posted: put the bank back"
    assert table.refusals(outs)[0].reason == reason
    assert ShowText("display", f"Refused: {reason}") in outs
    assert table.engine.view().state == "betting"
    bank(table, 1, 30_000)  # put back
    table.lock()
    assert table.payload("round_started")["banking"]["funds"] == 30_000
    assert table.engine.view().state == "decisions"


def test_the_dps_bank_leaving_the_felt_after_the_lock_is_past_posting_and_holds_the_table() -> None:
    table = accepted_on_the_spot()
    table.lock()
    bank(table, 1, 30_000)  # the sensors re-report it unchanged: nothing happens
    assert not table.journal("past_posting")
    bank(table, 1, 10_000)
    assert table.payload("past_posting") == {
        "seat": 1,
        "wager": "bank",
        "locked_cents": 30_000,
        "seen_cents": 10_000,
    }
    assert table.engine.view().held
    [fault] = table.engine.view().latched.values()
    assert fault.kind == "past_posting"
    bank(table, 1, 5_000)  # judged once a round: one fault, one hold
    assert len(table.journal("past_posting")) == 1
    bank(table, 1, 30_000)
    table.call(table.engine.handle, a.ClearFault(fault.fault_id, "sam", "bank put back"), table.now_s)
    assert not table.engine.view().latched  # (mypy narrows `held` after the assert above)
    assert table.engine.view().state == "decisions"


def test_a_keyed_bank_with_no_chips_on_the_spot_is_not_held_to_the_spot() -> None:
    table = dp_table()
    table.event(DpBankKeyed("display", 1, 30_000))
    table.start()
    table.bet(2, "ante", 500)
    table.lock()
    assert table.payload("round_started")["banking"]["funds"] == 30_000
    bank(table, 1, 0)
    assert not table.journal("past_posting")
    assert not table.engine.view().held


def keyed_then_placed(cents: int = 30_000, *, on_the_panel: bool = False) -> Table:
    """The bank keyed (or accepted on the panel) first; its chips placed on the spot after, before the
    lock."""
    table = dp_table()
    if on_the_panel:
        table.call(table.engine.handle, a.DpAccepts(cents, "sam", 1), table.now_s)
    else:
        table.event(DpBankKeyed("display", 1, cents))
    table.start()
    bank(table, 1, cents)
    table.bet(2, "ante", 500)
    return table


def test_a_keyed_bank_placed_on_the_spot_before_the_lock_is_held_to_it_at_the_lock() -> None:
    table = keyed_then_placed()
    bank(table, 1, 25_000)  # the DP takes 50.00 back before the lock
    outs = table.lock()
    reason = "seat 1's bank spot holds 250.00, less than the bank 300.00 it posted: put the bank back"
    assert table.refusals(outs)[0].reason == reason
    assert table.engine.view().state == "betting"
    bank(table, 1, 30_000)
    table.lock()
    assert table.engine.view().state == "decisions"


def test_a_panel_accepted_bank_placed_on_the_spot_leaving_it_after_the_lock_is_past_posting() -> None:
    table = keyed_then_placed(on_the_panel=True)
    table.lock()
    assert table.engine.view().state == "decisions"
    bank(table, 1, 0)  # the DP takes the whole bank back after the lock
    assert table.payload("past_posting") == {
        "seat": 1,
        "wager": "bank",
        "locked_cents": 30_000,
        "seen_cents": 0,
    }
    assert table.engine.view().held
    [fault] = table.engine.view().latched.values()
    assert fault.kind == "past_posting"


def test_a_keyed_bank_whose_spot_never_reaches_the_bank_before_the_lock_stays_unguarded() -> None:
    """Chips short of the keyed bank (or placed only after the lock) do not hold it to the spot: what the
    spot holds is not the bank the coverage counted (docs/rules.md says so)."""
    table = dp_table()
    table.event(DpBankKeyed("display", 1, 30_000))
    table.start()
    bank(table, 1, 20_000)
    table.bet(2, "ante", 500)
    table.lock()
    assert table.engine.view().state == "decisions"
    bank(table, 1, 30_000)  # reached only after the lock
    bank(table, 1, 0)
    assert not table.journal("past_posting")
    assert not table.engine.view().held
