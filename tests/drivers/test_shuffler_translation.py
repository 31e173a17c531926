"""The shuffler driver as a protocol translator, a pure function of the shoe's messages (no port, no
loop): every card passes on with its position and index exactly as reported — a repeat, a gap or an
extra card too, for the engine's deal part judges the deal (tests/engine/test_deal_ledger.py) — every
HandComplete with its count, the shoe's own faults as ShufflerFault, and a ShuffleDone that answers no
Shuffle is the one reply the driver itself refuses."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

import firmware_protocol as fp
from drivers.events import CardDealt, Deal, DeckVerified, DomainEvent, HandComplete, Shuffle, ShufflerFault
from drivers.shuffler import ShufflerDriver


def make_driver() -> ShufflerDriver:
    # A socket URL is only parsed here; nothing connects, nothing runs.
    driver = ShufflerDriver("shuffler", "socket://127.0.0.1:9", bytes(range(32)), publish=lambda e: None)
    driver.command_sent(Deal("shuffler", ((1, 2), (0, 2))))
    return driver


def feed(driver: ShufflerDriver, messages: list[fp.Message]) -> list[DomainEvent]:
    return [event for message in messages for event in driver.translate(message)]


shoe_reports = st.lists(
    st.one_of(
        st.builds(
            fp.CardDealt,
            position=st.sampled_from([0, 1, 2, 15]),
            index=st.integers(0, 51),
            card=st.integers(0, 51),
        ),
        st.builds(fp.HandComplete, position=st.sampled_from([0, 1, 2, 15]), card_count=st.integers(0, 52)),
    ),
    max_size=40,
)


@given(shoe_reports)
@settings(max_examples=200, deadline=None)
def test_every_card_and_count_passes_as_the_shoe_reported_it(messages: list[fp.Message]) -> None:
    # Repeats, gaps, extra cards and wrong counts included: judging them is the engine's.
    expected: list[DomainEvent] = [
        CardDealt("shuffler", m.position, m.index, m.card)
        if isinstance(m, fp.CardDealt)
        else HandComplete("shuffler", m.position, m.card_count)
        for m in messages
        if isinstance(m, fp.CardDealt | fp.HandComplete)
    ]
    assert feed(make_driver(), messages) == expected


def test_the_shoes_own_faults_pass_as_shuffler_faults() -> None:
    events = feed(
        make_driver(),
        [
            fp.ShufflerFault(fault="red_light", position=1, detail="lamp"),
            fp.ShufflerFault(fault="misread", position=None, detail="card unreadable"),
        ],
    )
    assert events == [
        ShufflerFault("shuffler", "red_light", 1, "lamp"),
        ShufflerFault("shuffler", "misread", None, "card unreadable"),
    ]


def test_a_shuffle_done_that_answers_no_shuffle_is_refused() -> None:
    driver = make_driver()
    done = fp.ShuffleDone(card_count=52, missing_cards=(), extra_cards=())
    assert feed(driver, [done]) == [
        ShufflerFault("shuffler", "other", None, "shuffle_done with no shuffle asked")
    ]
    driver.command_sent(Shuffle("shuffler"))
    assert feed(driver, [done, done]) == [
        DeckVerified("shuffler", 52, (), ()),
        ShufflerFault("shuffler", "other", None, "shuffle_done with no shuffle asked"),
    ]
