"""The progressive controller's meter model through its stand-alone store (the table's real SQLite
journal): the meter equations over random event sequences, a restart that restores the meter exactly,
idempotent requests, and every refusal in one line (docs/rules.md "Progressive: the controller")."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from controller.errors import UserError
from controller.journal import Journal
from controller.journal.state import TableState
from controller.journal.verify import verify_chain
from controller.progressive.controller import ProgressiveController
from controller.progressive.journal_store import JournalStore
from controller.progressive.model import Hit, MeterState, parse_parameters
from controller.progressive.parameters import change_progressive_parameters

GOOD: dict[str, object] = {
    "unit_cents": 100,
    "base_cents": 50_000,
    "reset_cents": 50_000,
    "increment_percent": 20,
    "hidden_percent": 5,
    "limit_cents": 50_400,  # low: the limit and the overflow are reached within a few rounds
}
PARAMETERS = parse_parameters(GOOD)


def _open(path: Path, table_id: str = "T1") -> tuple[Journal, ProgressiveController]:
    journal = Journal.open(path, table_id, synchronous="OFF")
    controller = ProgressiveController(JournalStore(journal))
    controller.open_now(table_id, PARAMETERS, by="daemon")
    return journal, controller


def _check_equations(state: MeterState) -> None:
    meter_expected, meter = state.meter_equation()
    reserve_expected, reserve = state.reserve_equation()
    assert meter_expected == meter, "base + Σ increments + Σ resets − Σ meter awards = the meter"
    assert reserve_expected == reserve, "Σ hidden + Σ overflow − Σ resets funded + Σ movements = the reserve"
    assert state.resets_from_reserve_cents + state.resets_house_added_cents == state.resets_cents
    assert state.equations_hold()


# One round: its settled wagers (0-7) and its hits (seat, run length); a claim replayed; a confirmation
# of some pending award; a reserve movement; a restart.
ROUND = st.tuples(
    st.integers(min_value=0, max_value=7),
    st.lists(st.integers(min_value=0, max_value=7), min_size=0, max_size=7),
    st.booleans(),
)
STEP = st.one_of(
    st.tuples(st.just("round"), ROUND),
    st.tuples(st.just("confirm"), st.integers(min_value=0, max_value=50)),
    st.tuples(st.just("reserve"), st.integers(min_value=-5_000, max_value=5_000)),
    st.tuples(st.just("restart"), st.none()),
)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(STEP, min_size=1, max_size=25))
def test_the_meter_equations_hold_over_random_events_and_a_restart(
    steps: list[tuple[str, object]], tmp_path_factory: pytest.TempPathFactory
) -> None:
    path = tmp_path_factory.mktemp("meter") / "journal.sqlite"
    journal, controller = _open(path)
    paid_ids: list[str] = []
    try:
        for number, (what, value) in enumerate(steps):
            if what == "round":
                assert isinstance(value, tuple)
                wagers, runs, replay = value
                round_id = f"R-{number}"
                controller.contribute_now("T1", round_id, wagers)
                hits = [Hit(seat, run) for seat, run in enumerate(runs[:wagers], start=1) if run >= 3]
                if hits:
                    first = controller.claim_now("T1", round_id, hits)
                    if replay:  # the same claim again: the first answer, nothing recorded twice
                        again = controller.claim_now("T1", round_id, hits[:1])
                        assert again.replayed
                        assert again.awards == first.awards
            elif what == "confirm":
                pending = controller.state.pending()
                if pending:
                    award = pending[int(value) % len(pending)]  # type: ignore[call-overload]
                    answer = controller.confirm_paid_now(award.claimed.award_id, by="sue")
                    assert not answer.replayed
                    assert controller.confirm_paid_now(award.claimed.award_id, by="sue").replayed
                    paid_ids.append(award.claimed.award_id)
            elif what == "reserve":
                assert isinstance(value, int)
                if value and controller.state.reserve_cents + value >= 0:
                    controller.move_reserve_now(value, reason="house", by="mia")
            else:  # a restart: the meter from the journal alone
                before = controller.state
                journal.close()
                journal = Journal.open(path, "T1", synchronous="OFF")
                controller = ProgressiveController(JournalStore(journal))
                assert controller.state == before
            _check_equations(controller.state)
        state = controller.state
        # Every award paid once: a paid award has exactly one progressive_award_paid.
        paid_entries = [s.entry for s in journal.replay(kinds=["progressive_award_paid"])]
        paid_award_ids = [entry.award_id for entry in paid_entries]  # type: ignore[attr-defined]
        assert len(paid_award_ids) == len(set(paid_award_ids))
        assert set(paid_ids) <= set(paid_award_ids)
        assert state.paid_cents == sum(a.claimed.amount_cents for a in state.awards.values() if not a.pending)
        # The claim order is the order recorded.
        assert [a.claimed.claim_number for a in state.awards.values()] == list(
            range(1, len(state.awards) + 1)
        )
        # The table's reducer folds the same meter from the same journal.
        table = TableState("T1").apply_all(journal.replay())
        assert table.progressive == state
        assert verify_chain(path).ok
    finally:
        journal.close()


def test_a_jackpot_freezes_its_amount_and_re_seeds_the_meter_at_once(tmp_path: Path) -> None:
    journal, controller = _open(tmp_path / "journal.sqlite")
    with journal:
        controller.contribute_now("T1", "R-1", 5)  # 100 cents to the meter, 25 hidden
        answer = controller.claim_now("T1", "R-1", [Hit(3, 7), Hit(1, 5)])
        jackpot, fixed = answer.awards
        assert (jackpot.claimed.amount_cents, jackpot.claimed.meter_after_cents) == (50_100, 50_000)
        assert jackpot.pending
        assert jackpot.claimed.needs_confirmation
        assert controller.state.meter_cents == 50_000  # re-seeded before anyone confirmed anything
        assert not fixed.pending
        assert fixed.claimed.amount_cents == 50_000
        reset = controller.state
        assert (reset.resets_from_reserve_cents, reset.resets_house_added_cents) == (25, 49_975)
        # A contribution after the lock moves the re-seeded meter, never the frozen award.
        controller.contribute_now("T1", "R-2", 1)
        assert controller.state.award("T1/R-1/3").claimed.amount_cents == 50_100  # type: ignore[union-attr]
        paid = controller.confirm_paid_now("T1/R-1/3", by="sue")
        assert paid.award.paid is not None
        assert paid.award.paid.by == "sue"
        _check_equations(controller.state)


def test_a_replayed_contribution_or_claim_gets_the_first_answer(tmp_path: Path) -> None:
    journal, controller = _open(tmp_path / "journal.sqlite")
    with journal:
        first = controller.contribute_now("T1", "R-1", 2)
        again = controller.contribute_now("T1", "R-1", 7)
        assert again.replayed
        assert again.contribution == first.contribution
        claim = controller.claim_now("T1", "R-1", [Hit(1, 6)])
        replay = controller.claim_now("T1", "R-1", [Hit(1, 6), Hit(2, 7)])
        assert replay.replayed
        assert replay.awards == claim.awards
        kinds = [
            s.kind for s in journal.replay(kinds=["progressive_contribution", "progressive_award_claimed"])
        ]
        assert kinds == ["progressive_contribution", "progressive_award_claimed"]


@pytest.mark.parametrize(
    ("changes", "words"),
    [
        ({"unit_cents": 0}, "progressive.unit_cents: a unit of 0 is no wager"),
        ({"reset_cents": 40_000}, "progressive.reset_cents: 40000 is below the base (50000)"),
        ({"increment_percent": 101}, "progressive.increment_percent: 101% is over 100%"),
        ({"increment_percent": 80, "hidden_percent": 30}, "is over 100% of the wager"),
        ({"limit_cents": 49_999}, "progressive.limit_cents: 49999 is below the reset (50000)"),
        ({"signoff_cents": 0}, "progressive.signoff_cents: 0 would make every award wait"),
        (
            {"max_round_wagers": 8},
            "progressive.max_round_wagers: a round's wagers at one table are from 1 to 7",
        ),
        ({"unit_cents": 3, "increment_percent": 10}, "a wager's contribution must be whole cents"),
    ],
)
def test_each_parameter_that_makes_no_sense_is_refused_in_one_line(
    changes: dict[str, object], words: str
) -> None:
    with pytest.raises(UserError) as refused:
        parse_parameters({**GOOD, **changes})
    assert words in str(refused.value)
    assert "\n" not in str(refused.value)


def test_a_change_of_parameters_is_a_managers_between_rounds_and_journaled(tmp_path: Path) -> None:
    journal, controller = _open(tmp_path / "journal.sqlite")
    with journal:
        controller.contribute_now("T1", "R-1", 7)  # the meter at 50,140
        cases: list[tuple[dict[str, object], str, bool, str]] = [
            ({**GOOD, "limit_cents": 60_000}, "supervisor", False, "only a manager changes"),
            ({**GOOD, "limit_cents": 60_000}, "manager", True, "only between rounds; a round is in play"),
            (
                {**GOOD, "limit_cents": 50_100},
                "manager",
                False,
                "50100 is below the meter as it stands (50140)",
            ),
            (dict(GOOD), "manager", False, "the parameters are unchanged"),
            ({**GOOD, "reset_cents": 1}, "manager", False, "is below the base"),
        ]
        for requested, role, in_play, words in cases:
            with pytest.raises(UserError, match=re.escape(words)):
                change_progressive_parameters(
                    controller, requested, by="mia", role=role, round_in_play=in_play
                )
        assert controller.state.changes == 0
        change_progressive_parameters(
            controller, {**GOOD, "limit_cents": 60_000}, by="mia", role="manager", round_in_play=False
        )
        (changed,) = list(journal.replay(kinds=["progressive_parameters_changed"]))[1:]
        assert changed.source == "operator:mia"
        assert changed.entry.before["limit_cents"] == 50_400  # type: ignore[attr-defined]
        assert controller.state.meter_cents == 50_140  # a change moves no meter


def test_bad_requests_are_refused_in_one_line_and_change_nothing(tmp_path: Path) -> None:
    journal, controller = _open(tmp_path / "journal.sqlite")
    with journal:
        controller.contribute_now("T1", "R-1", 2)
        before = controller.state.to_json()
        cases: list[tuple[str, object]] = [
            (
                "saw no Progressive wagers contributed for that round",
                lambda: controller.claim_now("T1", "R-9", [Hit(1, 7)]),
            ),
            (
                "names 3 hits for 2 wagers",
                lambda: controller.claim_now("T1", "R-1", [Hit(1, 3), Hit(2, 3), Hit(3, 3)]),
            ),
            ("names a seat twice", lambda: controller.claim_now("T1", "R-1", [Hit(1, 3), Hit(1, 4)])),
            ("2-card run reaches no line", lambda: controller.claim_now("T1", "R-1", [Hit(1, 2)])),
            (
                "is an unreasonable contribution (at most 7)",
                lambda: controller.contribute_now("T1", "R-2", 8),
            ),
            (
                "no award 'T1/R-1/5' was ever recorded",
                lambda: controller.confirm_paid_now("T1/R-1/5", by="sue"),
            ),
            ("cannot be taken from it", lambda: controller.move_reserve_now(-1_000, reason="x", by="mia")),
        ]
        for words, request in cases:
            with pytest.raises(UserError) as refused:
                request()  # type: ignore[operator]
            assert words in str(refused.value)
            assert "\n" not in str(refused.value)
        assert controller.state.to_json() == before


def test_the_fold_never_raises_on_a_foreign_entry_and_check_shapes_bounds_its_amounts() -> None:
    """The floor folds what tables send: an entry this module would never write changes nothing and
    raises nothing; an amount past any amount is refused by check_shapes (one line)."""
    from controller.journal import entries as e

    state = MeterState().apply_all(
        [
            e.ProgressiveParametersChanged(meter_id="T1", by="x", after={"unit_cents": 0}),
            e.ProgressiveAwardClaimed(
                meter_id="T1",
                award_id="T1/R/1",
                claim_number=1,
                table_id="T1",
                round_id="R",
                seat=1,
                line=7,
                award=1,
                amount_cents=5,
                paid_from="meter",
                needs_confirmation=True,
            ),
        ]
    )
    assert state.parameters is None
    assert state.meter_cents == 0
    huge = e.ProgressiveReserve(meter_id="T1", amount_cents=10**17, reason="x", by="y", reserve_after_cents=0)
    with pytest.raises(
        e.EntryError, match=r"progressive_reserve.amount_cents: 100000000000000000 is past any amount"
    ):
        e.check_shapes(huge)
    e.check_shapes(
        e.ProgressiveReserve(meter_id="T1", amount_cents=-5, reason="x", by="y", reserve_after_cents=0)
    )


def test_a_meter_remembers_recent_rounds_only_and_never_pays_a_forgotten_one_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A table runs for months: what a meter keeps per round and per paid award is bounded (the totals
    are counters); a replay of a forgotten round is refused, never counted or paid again."""
    from controller.progressive import model

    monkeypatch.setattr(model, "RECENT_ROUNDS", 3)
    monkeypatch.setattr(model, "RECENT_PAID_AWARDS", 2)
    journal, controller = _open(tmp_path / "journal.sqlite")
    with journal:
        rounds = [f"RT1-20261205-{number:06d}" for number in range(1, 11)]  # the table's round ids
        for round_id in rounds:
            controller.contribute_now("T1", round_id, 1)
            controller.claim_now("T1", round_id, [Hit(1, 3)])  # 5 units, paid in the round
        state = controller.state
        assert len(state.contributions) == 3
        assert len(state.claims) == 3
        assert len(state.awards) == 2
        assert state.claim_count == 10
        assert state.fixed_awards_cents == 10 * 500
        _check_equations(state)
        with pytest.raises(UserError, match="saw no Progressive wagers contributed for that round"):
            controller.claim_now("T1", rounds[0], [Hit(1, 3)])
        with pytest.raises(UserError, match="older than the rounds the meter remembers"):
            controller.contribute_now("T1", rounds[0], 1)  # never counted twice
        assert controller.contribute_now("T1", rounds[-1], 1).replayed
        assert controller.claim_now("T1", rounds[-1], [Hit(1, 3)]).replayed
        assert state.forgotten_through == {"T1": 7}
        assert len(list(journal.replay(kinds=["progressive_award_paid"]))) == 10
