"""The shuffler driver's checks as a pure function of what the shoe reports (no port, no loop):
whatever the shoe says, the domain gets each place of the deal at most once, each card at most once,
only places the deal asked for, in index order — and a faithful shoe's report passes untouched."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

import firmware_protocol as fp
from drivers.events import CardDealt, Deal, DomainEvent, HandComplete, ShufflerFault
from drivers.shuffler import ShufflerDriver

DEAL = ((1, 7), (2, 7), (3, 7), (0, 7))


def make_driver(published: list[DomainEvent]) -> ShufflerDriver:
    # A socket URL is only parsed here; nothing connects, nothing runs.
    driver = ShufflerDriver("shuffler", "socket://127.0.0.1:9", bytes(range(32)), publish=published.append)
    driver.command_sent(Deal("shuffler", DEAL))
    return driver


def feed(driver: ShufflerDriver, messages: list[fp.Message]) -> list[DomainEvent]:
    return [event for message in messages for event in driver.translate(message)]


def faithful_report(seed: int) -> list[fp.Message]:
    deck = list(range(52))
    random.Random(seed).shuffle(deck)
    messages: list[fp.Message] = []
    for position, count in DEAL:
        for index in range(count):
            messages.append(fp.CardDealt(position=position, index=index, card=deck.pop()))
        messages.append(fp.HandComplete(position=position, card_count=count))
    return messages


@given(st.integers(0, 2**32))
@settings(max_examples=100, deadline=None)
def test_a_faithful_shoe_passes_untouched(seed: int) -> None:
    messages = faithful_report(seed)
    events = feed(make_driver([]), messages)
    assert not [e for e in events if isinstance(e, ShufflerFault)]
    cards = [(e.position, e.index, e.card) for e in events if isinstance(e, CardDealt)]
    assert cards == [(m.position, m.index, m.card) for m in messages if isinstance(m, fp.CardDealt)]
    assert len([e for e in events if isinstance(e, HandComplete)]) == len(DEAL)


report = st.lists(
    st.one_of(
        st.builds(
            fp.CardDealt,
            position=st.sampled_from([0, 1, 2, 3, 4, 15]),
            index=st.integers(0, 9),
            card=st.integers(0, 51),
        ),
        st.builds(fp.HandComplete, position=st.sampled_from([0, 1, 2, 3, 4]), card_count=st.integers(0, 9)),
    ),
    max_size=80,
)


@given(st.integers(0, 2**32), report, st.randoms(use_true_random=False))
@settings(max_examples=300, deadline=None)
def test_whatever_the_shoe_reports_the_domain_gets_a_consistent_deal(
    seed: int, noise: list[fp.Message], rng: random.Random
) -> None:
    # A faithful report with arbitrary wrong, repeated and conflicting reports mixed in. A report out of
    # order (a gap) is refused and binds nothing; the shoe's next report for that place is judged anew.
    messages = faithful_report(seed)
    for message in noise:
        messages.insert(rng.randrange(len(messages) + 1), message)
    driver = make_driver([])
    produced = [list(driver.translate(message)) for message in messages]  # the events of each report
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
    published: dict[tuple[int, int], int] = {}
    for message, batch in zip(messages, produced, strict=True):
        if not isinstance(message, fp.CardDealt):
            continue
        place = (message.position, message.index)
        for event in batch:
            if isinstance(event, CardDealt):
                assert (event.position, event.index, event.card) == (*place, message.card)  # as reported
                published[place] = event.card
        if place in published and message.card != published[place]:
            # The shoe changed its mind about a card already published: a misread, never a new card.
            assert [(type(e).__name__, getattr(e, "fault", None)) for e in batch] == [
                ("ShufflerFault", "misread")
            ]
    completes = [e.position for e in events if isinstance(e, HandComplete)]
    assert len(completes) == len(set(completes))
