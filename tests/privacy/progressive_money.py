"""The Progressive wager's money in the privacy property (test_privacy_property.py): a table's own
(stand-alone) meter, read from the journal and from the panel, checked against the settlements.

The fold here is the test's own (never ``MeterState``): the meter opens at the base of the first
``progressive_parameters_changed``, each ``progressive_contribution`` adds its ``to_meter_cents``, a
meter award (``paid_from`` "meter") takes its amount, a ``progressive_reset`` re-seeds it. Against it:

- each settled round's ``progressive`` object: its ``meter_before_cents`` is the meter folded so far, its
  ``meter_after_cents`` the meter once the round's entries are folded; its contributions are the round's
  one ``progressive_contribution`` (and ``progressive_overflow``), its awards the round's
  ``progressive_award_claimed`` in order, its reset the round's ``progressive_reset``; it collected the
  unit of each settled (not returned) Progressive wager and its ``net_cents`` is that less its awards,
  which is minus the seats' Progressive nets;
- a round that did not settle (dead, voided) or settled no Progressive wager contributes and claims
  nothing;
- every award claimed once and paid at most once, at its amount; one that needs no supervisor paid in
  its own round; only claimed awards paid;
- base + Σ to the meter + Σ resets − Σ meter awards = the meter (every entry's own ``meter_after``
  agrees); Σ hidden + Σ overflow − Σ funded from the reserve = the reserve; each reset = from the
  reserve + added by the house;
- the panel's Progressive card (``/api/table``'s ``progressive``, the product's fold) shows the same
  meter and reserve, the same awards pending, and its equations holding.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from controller.journal.store import JournalEntry

PROGRESSIVE_WAGER = "progressive"
RETURNED = "returned"
# The progressive's entries that belong to a round's settlement (a payment may come rounds later).
ROUND_KINDS = frozenset(
    {"progressive_contribution", "progressive_overflow", "progressive_award_claimed", "progressive_reset"}
)


@dataclass(slots=True)
class MeterFold:
    """The test's own fold of a table's progressive entries (cents)."""

    base_cents: int | None = None
    meter_cents: int = 0
    reserve_cents: int = 0
    to_meter_cents: int = 0
    resets_cents: int = 0
    meter_awards_cents: int = 0
    hidden_cents: int = 0
    overflow_cents: int = 0
    from_reserve_cents: int = 0
    claimed: dict[str, Mapping[str, Any]] = field(default_factory=dict)  # award id -> its claim
    paid: dict[str, Mapping[str, Any]] = field(default_factory=dict)  # award id -> its payment
    round_entries: dict[str, list[JournalEntry]] = field(default_factory=dict)  # progressive_* by round


def _settled_progressive_stakes(settlement: Mapping[str, Any]) -> tuple[int, int, int]:
    """(wagers settled, wagers returned, Σ the seats' Progressive nets) of a settlement."""
    settled = returned = nets = 0
    for seat in settlement["seats"]:
        wager = (seat.get("wagers") or {}).get(PROGRESSIVE_WAGER)
        if not wager or int(wager["stake"]) <= 0:
            continue
        nets += int(wager["net"])
        if wager["result"] == RETURNED:
            returned += 1
        else:
            settled += 1
    return settled, returned, nets


def _check_round(round_id: str, entry: JournalEntry, meter_before_cents: int) -> int | None:
    """One closing's Progressive: what it says against the fold; the meter it leaves (None: nothing)."""
    settlement = entry.payload["settlement"]
    progressive = settlement.get("progressive")
    settled, returned, seat_nets = _settled_progressive_stakes(settlement)
    if entry.kind != "round_settled" or progressive is None:
        assert settled == 0, f"round {round_id} ({entry.kind}): {settled} Progressive wagers settled"
        net = 0 if progressive is None else int(progressive.get("net_cents", 0))
        assert net == 0 == seat_nets, f"round {round_id} ({entry.kind}): a Progressive net of {net}"
        return None
    unit = int(progressive["unit_cents"])
    contributions = progressive["contributions"]
    awards = list(progressive.get("awards") or [])
    assert int(contributions["wagers"]) == settled, (round_id, contributions, settled)
    assert int(contributions["returned_wagers"]) == returned, (round_id, contributions, returned)
    assert int(progressive["collected_cents"]) == settled * unit, (round_id, progressive)
    awarded = sum(int(award["amount_cents"]) for award in awards)
    assert int(progressive["paid_cents"]) == awarded, (round_id, progressive)
    assert int(progressive["net_cents"]) == settled * unit - awarded, (round_id, progressive)
    assert int(progressive["net_cents"]) == -seat_nets, (
        f"round {round_id}: the progressive's net {progressive['net_cents']} is not minus the seats' "
        f"Progressive nets {seat_nets}"
    )
    assert int(progressive["meter_before_cents"]) == meter_before_cents, (
        f"round {round_id}: settled on a meter of {progressive['meter_before_cents']}, the journal's meter "
        f"was {meter_before_cents}"
    )
    return int(progressive["meter_after_cents"])


def _check_round_entries(fold: MeterFold, round_id: str, settlement: Mapping[str, Any] | None) -> None:
    """The round's progressive entries are its settlement's contributions, awards and reset."""
    entries = fold.round_entries.get(round_id, [])
    progressive = None if settlement is None else settlement.get("progressive")
    wagers = 0 if progressive is None else int(progressive["contributions"]["wagers"])
    contributions = [e.payload for e in entries if e.kind == "progressive_contribution"]
    overflows = [e.payload for e in entries if e.kind == "progressive_overflow"]
    claims = [e.payload for e in entries if e.kind == "progressive_award_claimed"]
    resets = [e.payload for e in entries if e.kind == "progressive_reset"]
    if progressive is None or wagers == 0:
        assert not entries, (
            f"round {round_id}: progressive entries for a round that settled no Progressive wager: "
            f"{[e.kind for e in entries]}"
        )
        return
    assert len(contributions) == 1, f"round {round_id}: {len(contributions)} contributions"
    (given,) = contributions
    said = progressive["contributions"]
    assert int(given["wagers"]) == wagers, (
        f"round {round_id}: contributed {given['wagers']} wagers, settled {wagers}: {given} / {said}"
    )
    assert int(given["in_meter_cents"]) == wagers * int(progressive["unit_cents"]), (round_id, given)
    for key in ("increment_cents", "to_meter_cents", "hidden_cents"):
        assert int(given[key]) == int(said[key]), (round_id, key, given, said)
    overflow = sum(int(o["overflow_cents"]) for o in overflows)
    assert overflow == int(said["overflow_cents"]), (round_id, overflows, said)
    assert int(given["to_meter_cents"]) + overflow == int(given["increment_cents"]), (round_id, given)
    awards = list(progressive.get("awards") or [])
    got = [(int(c["seat"]), int(c["line"]), int(c["amount_cents"]), c["paid_from"]) for c in claims]
    want = [(int(a["seat"]), int(a["line"]), int(a["amount_cents"]), a["paid_from"]) for a in awards]
    assert got == want, f"round {round_id}: claimed {got}, the settlement awards {want}"
    reset = progressive.get("reset")
    reset_said = [] if reset is None else [int(reset["amount_cents"])]
    assert [int(r["amount_cents"]) for r in resets] == reset_said, (round_id, resets, reset)


def check_progressive(entries: Sequence[JournalEntry], shown: Mapping[str, Any] | None) -> int:
    """Every check of the module docstring; ``shown`` is the panel's ``/api/table`` JSON. Returns the
    number of Progressive wagers settled (what the run reached)."""
    fold = MeterFold()
    settlements: dict[str, Mapping[str, Any] | None] = {}
    expected_after: dict[str, int] = {}
    wagers_settled = 0
    for entry in entries:
        kind, payload, round_id = entry.kind, entry.payload, entry.round_id
        if kind == "progressive_parameters_changed":
            if fold.base_cents is None:
                fold.base_cents = int(payload["after"]["base_cents"])
                fold.meter_cents = fold.base_cents
            continue
        if kind in ("round_settled", "round_dead", "round_voided") and round_id is not None:
            assert fold.base_cents is not None or entry.payload["settlement"].get("progressive") is None, (
                f"round {round_id} settled a Progressive before the meter opened"
            )
            after = _check_round(round_id, entry, fold.meter_cents)
            settlements[round_id] = entry.payload["settlement"] if kind == "round_settled" else None
            if after is not None:
                expected_after[round_id] = after
                wagers_settled += int(entry.payload["settlement"]["progressive"]["contributions"]["wagers"])
            continue
        if not kind.startswith("progressive_"):
            continue
        if kind in ROUND_KINDS:
            owner = str(payload["round_id"])
            assert owner in settlements, f"{kind} for round {owner}, which has not settled"
            fold.round_entries.setdefault(owner, []).append(entry)
        if kind == "progressive_contribution":
            fold.to_meter_cents += int(payload["to_meter_cents"])
            fold.hidden_cents += int(payload["hidden_cents"])
            fold.meter_cents += int(payload["to_meter_cents"])
            assert int(payload["meter_after_cents"]) == fold.meter_cents, (payload, fold.meter_cents)
        elif kind == "progressive_overflow":
            fold.overflow_cents += int(payload["overflow_cents"])
        elif kind == "progressive_award_claimed":
            award_id = str(payload["award_id"])
            assert award_id not in fold.claimed, f"award {award_id} claimed twice"
            fold.claimed[award_id] = payload
            if payload["paid_from"] == "meter":
                assert int(payload["meter_before_cents"]) == fold.meter_cents, (payload, fold.meter_cents)
                fold.meter_cents -= int(payload["amount_cents"])
                fold.meter_awards_cents += int(payload["amount_cents"])
        elif kind == "progressive_reset":
            amount = int(payload["amount_cents"])
            assert amount == int(payload["from_reserve_cents"]) + int(payload["house_added_cents"]), payload
            fold.meter_cents += amount
            fold.resets_cents += amount
            fold.from_reserve_cents += int(payload["from_reserve_cents"])
        elif kind == "progressive_award_paid":
            award_id = str(payload["award_id"])
            claim = fold.claimed.get(award_id)
            assert claim is not None, f"award {award_id} paid, never claimed"
            assert award_id not in fold.paid, f"award {award_id} paid twice"
            assert int(payload["amount_cents"]) == int(claim["amount_cents"]), (payload, claim)
            fold.paid[award_id] = payload
        if "reserve_after_cents" in payload:
            fold.reserve_cents = int(payload["reserve_after_cents"])
        # A round's meter after: once its last progressive entry is folded (the next closing or the end).
    for round_id, settlement in settlements.items():
        _check_round_entries(fold, round_id, settlement)
    _check_meter_after(fold, entries, expected_after)
    for award_id, claim in fold.claimed.items():
        if not claim["needs_confirmation"]:
            paid = fold.paid.get(award_id)
            assert paid is not None, f"award {award_id} needs no supervisor and was not paid in its round"
            assert paid["by"] == "engine", (award_id, paid)
    if fold.base_cents is not None:
        assert fold.base_cents + fold.to_meter_cents + fold.resets_cents - fold.meter_awards_cents == (
            fold.meter_cents
        )
        assert fold.hidden_cents + fold.overflow_cents - fold.from_reserve_cents == fold.reserve_cents, (
            fold.hidden_cents,
            fold.overflow_cents,
            fold.from_reserve_cents,
            fold.reserve_cents,
        )
    if shown is not None:
        _check_panel(fold, shown)
    return wagers_settled


def _check_meter_after(fold: MeterFold, entries: Sequence[JournalEntry], expected: Mapping[str, int]) -> None:
    """Each settled round's ``meter_after_cents`` is the meter once its own progressive entries are
    folded (replayed here in journal order, the round's entries ending at the next closing)."""
    if not expected:
        return
    assert fold.base_cents is not None
    meter = fold.base_cents
    pending: str | None = None
    for entry in entries:
        kind, payload = entry.kind, entry.payload
        if kind in ("round_settled", "round_dead", "round_voided", "round_started"):
            if pending is not None:
                assert meter == expected[pending], (
                    f"round {pending}: its settlement leaves the meter at {expected[pending]}, its entries "
                    f"at {meter}"
                )
                pending = None
            if kind == "round_settled" and entry.round_id in expected:
                pending = entry.round_id
        elif kind == "progressive_contribution":
            meter += int(payload["to_meter_cents"])
        elif kind == "progressive_award_claimed" and payload["paid_from"] == "meter":
            meter -= int(payload["amount_cents"])
        elif kind == "progressive_reset":
            meter += int(payload["amount_cents"])
    if pending is not None:
        assert meter == expected[pending], (pending, meter, expected[pending])


def _check_panel(fold: MeterFold, shown: Mapping[str, Any]) -> None:
    card = shown.get("progressive")
    if fold.base_cents is None:
        assert card is None, card
        return
    assert card is not None, "the panel shows no Progressive card at a table whose meter opened"
    assert int(card["meter_cents"]) == fold.meter_cents, (card["meter_cents"], fold.meter_cents)
    assert int(card["reserve_cents"]) == fold.reserve_cents, (card["reserve_cents"], fold.reserve_cents)
    assert card["equations_hold"] is True, f"the panel's Progressive card: its equations do not hold: {card}"
    pending = sorted(award_id for award_id in fold.claimed if award_id not in fold.paid)
    assert sorted(str(award["award_id"]) for award in card["pending"]) == pending, (card["pending"], pending)
