"""The deal part's ledger (controller/engine/deal.py ``DealLedger``) as a pure function of what the shoe
reports (no engine, no port): whatever the shoe says, the round gets each place of the deal at most once,
each card at most once, only places the deal asked for, in index order — and a faithful shoe's report
passes untouched. (These checks were the shuffler driver's; the driver now reports, the engine judges:
docs/engine.md "Who checks the deal".)"""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from controller.engine.ledger import DealLedger
from drivers.events import CardDealt, HandComplete, ShufflerFault

DEAL = ((1, 7), (2, 7), (3, 7), (0, 7))
Report = CardDealt | HandComplete


def make_ledger() -> DealLedger:
    ledger = DealLedger()
    ledger.start(dict(DEAL))
    return ledger


def judge(ledger: DealLedger, report: Report) -> list[object]:
    """What the round gets for one report: the report if it stands, then the fault it carries."""
    if isinstance(report, CardDealt):
        fault = ledger.card(report)
        return [report] if fault is None else [fault]
    stands, count_fault = ledger.hand_complete(report)
    return ([report] if stands else []) + ([count_fault] if count_fault is not None else [])


def faithful_report(seed: int) -> list[Report]:
    deck = list(range(52))
    random.Random(seed).shuffle(deck)
    reports: list[Report] = []
    for position, count in DEAL:
        for index in range(count):
            reports.append(CardDealt("shuffler", position, index, deck.pop()))
        reports.append(HandComplete("shuffler", position, count))
    return reports


@given(st.integers(0, 2**32))
@settings(max_examples=100, deadline=None)
def test_a_faithful_shoe_passes_untouched(seed: int) -> None:
    reports = faithful_report(seed)
    ledger = make_ledger()
    assert [event for report in reports for event in judge(ledger, report)] == reports


report = st.lists(
    st.one_of(
        st.builds(
            CardDealt,
            device=st.just("shuffler"),
            position=st.sampled_from([0, 1, 2, 3, 4, 15]),
            index=st.integers(0, 9),
            card=st.integers(0, 51),
        ),
        st.builds(
            HandComplete,
            device=st.just("shuffler"),
            position=st.sampled_from([0, 1, 2, 3, 4]),
            card_count=st.integers(0, 9),
        ),
    ),
    max_size=80,
)


@given(st.integers(0, 2**32), report, st.randoms(use_true_random=False))
@settings(max_examples=300, deadline=None)
def test_whatever_the_shoe_reports_the_round_gets_a_consistent_deal(
    seed: int, noise: list[Report], rng: random.Random
) -> None:
    # A faithful report with arbitrary wrong, repeated and conflicting reports mixed in. A report out of
    # order (a gap) is refused and binds nothing; the shoe's next report for that place is judged anew.
    reports = faithful_report(seed)
    for one in noise:
        reports.insert(rng.randrange(len(reports) + 1), one)
    ledger = make_ledger()
    produced = [judge(ledger, one) for one in reports]  # what the round gets for each report
    events = [event for batch in produced for event in batch]
    cards = [e for e in events if isinstance(e, CardDealt)]
    requested = dict(DEAL)
    assert len({(c.position, c.index) for c in cards}) == len(cards)  # each place once
    assert len({c.card for c in cards}) == len(cards)  # each card once
    for position in {c.position for c in cards}:
        indexes = [c.index for c in cards if c.position == position]
        assert position in requested
        assert indexes == sorted(indexes)
        assert max(indexes) < requested[position]
    bound: dict[tuple[int, int], int] = {}
    for one, batch in zip(reports, produced, strict=True):
        if not isinstance(one, CardDealt):
            continue
        place = (one.position, one.index)
        for event in batch:
            if isinstance(event, CardDealt):
                bound[place] = event.card
        if place in bound and one.card != bound[place]:
            # The shoe changed its mind about a card already bound: a misread, never a new card.
            assert [(type(e).__name__, getattr(e, "fault", None)) for e in batch] == [
                ("ShufflerFault", "misread")
            ]
    completes = [e.position for e in events if isinstance(e, HandComplete)]
    assert len(completes) == len(set(completes))


def test_each_wrong_report_is_the_fault_it_was_with_its_fields() -> None:
    """The faults' kinds, words and structured fields (the journal's private ReasonDetail)."""
    ledger = make_ledger()
    assert ledger.card(CardDealt("shuffler", 1, 0, 12)) is None
    assert ledger.card(CardDealt("shuffler", 1, 0, 12)) == ShufflerFault(
        "shuffler", "misread", 1, "index 0 reported twice", card=12, index=0
    )
    assert ledger.card(CardDealt("shuffler", 1, 0, 13)) == ShufflerFault(
        "shuffler", "misread", 1, "index 0 reported as card 12 and then as card 13", card=13, index=0
    )
    assert ledger.card(CardDealt("shuffler", 2, 0, 12)) == ShufflerFault(
        "shuffler",
        "misread",
        2,
        "card 12 dealt twice (first at position 1 index 0)",
        card=12,
        index=0,
        first_position=1,
        first_index=0,
    )
    # The refused card took its place: the next index follows on; the same card there again is a repeat.
    assert ledger.card(CardDealt("shuffler", 2, 0, 12)) == ShufflerFault(
        "shuffler", "misread", 2, "index 0 reported twice", card=12, index=0
    )
    assert ledger.card(CardDealt("shuffler", 2, 1, 20)) is None
    assert ledger.card(CardDealt("shuffler", 3, 2, 21)) == ShufflerFault(
        "shuffler", "card_count", 3, "index 2 after 0 cards", index=2
    )
    assert ledger.card(CardDealt("shuffler", 3, 7, 22)) == ShufflerFault(
        "shuffler", "card_count", 3, "extra card 22 at index 7 (7 requested)", card=22, index=7
    )
    assert ledger.card(CardDealt("shuffler", 5, 0, 23)) == ShufflerFault(
        "shuffler", "card_count", 5, "extra card 23 at index 0 (0 requested)", card=23, index=0
    )
    assert ledger.hand_complete(HandComplete("shuffler", 1, 6)) == (
        True,
        ShufflerFault("shuffler", "card_count", 1, "dealt 6 cards, 7 requested"),
    )
    assert ledger.hand_complete(HandComplete("shuffler", 1, 7)) == (
        False,
        ShufflerFault("shuffler", "card_count", 1, "hand_complete reported twice (7 cards)"),
    )
    assert ledger.hand_complete(HandComplete("shuffler", 2, 7)) == (True, None)


def test_a_new_deal_forgets_the_last() -> None:
    ledger = make_ledger()
    assert ledger.card(CardDealt("shuffler", 1, 0, 12)) is None
    ledger.start({1: 2})  # the next street (Chase the Flush) or a fresh deck
    assert ledger.card(CardDealt("shuffler", 1, 0, 12)) is None
    ledger.start({})  # a Shuffle or a reset: no deal asked for
    assert ledger.card(CardDealt("shuffler", 1, 0, 40)) == ShufflerFault(
        "shuffler", "card_count", 1, "extra card 40 at index 0 (0 requested)", card=40, index=0
    )
