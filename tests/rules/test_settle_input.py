"""Refused input: every refusal is a UserError whose message starts with the field and says why."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from controller.errors import UserError
from controller.rules.settle import MAX_AMOUNT_CENTS, parse_round

GOOD: dict[str, Any] = {
    "game": "high-card-flush",
    "dealer": ["Ts", "7s", "2s", "3d", "5d", "8c", "Jh"],
    "seats": [
        {
            "seat": 1,
            "cards": ["Ah", "Kh", "9h", "4h", "2c", "6c", "Qd"],
            "wagers": {"ante": 500, "raise": 500},
        },
        {
            "seat": 2,
            "cards": ["9d", "6d", "4d", "Kc", "2h", "3h", "6s"],
            "wagers": {"ante": 500},
            "folded": True,
        },
    ],
}


def changed(path: str, value: Any) -> dict[str, Any]:
    """GOOD with the field at ``path`` (dots and [n]) set to ``value``; the value ``...`` deletes it."""
    obj = copy.deepcopy(GOOD)
    target: Any = obj
    parts = path.replace("[", ".").replace("]", "").split(".")
    for part in parts[:-1]:
        target = target[int(part)] if part.isdigit() else target[part]
    last = parts[-1]
    key: Any = int(last) if last.isdigit() else last
    if value is ...:
        del target[key]
    else:
        target[key] = value
    return obj


def test_the_good_round_parses() -> None:
    assert parse_round(GOOD).game == "high-card-flush"


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        ("game", ..., r"^game: missing"),
        ("game", "poker", r"^game: unknown game 'poker'"),
        ("game", 3, r"^game: unknown game 3"),
        ("colour", "red", r"^round: unknown field 'colour'"),
        ("dealer", ..., r"^dealer: missing"),
        ("dealer", "Ts 7s", r"^dealer: must be a list, not a string"),
        ("dealer[2]", "10s", r"^dealer\[2\]: '10s' is not a card"),
        ("dealer[2]", "as", r"^dealer\[2\]: 'as' is not a card"),
        ("dealer[2]", 5, r"^dealer\[2\]: 5 is not a card"),
        ("dealer[1]", "Ts", r"^dealer\[1\]: Ts appears twice \(also in dealer\[0\]\)"),
        (
            "seats[1].cards[0]",
            "Ah",
            r"^seats\[1\]\.cards\[0\]: Ah appears twice \(also in seats\[0\]\.cards\[0\]\)",
        ),
        ("seats[0].cards[6]", "Jh", r"^seats\[0\]\.cards\[6\]: Jh appears twice \(also in dealer\[6\]\)"),
        ("seats", ..., r"^seats: missing"),
        ("seats", [], r"^seats: a round needs at least one seat"),
        ("seats", {"seat": 1}, r"^seats: must be a list, not an object"),
        ("seats[0]", [1], r"^seats\[0\]: must be an object, not a list"),
        ("seats[0].seat", ..., r"^seats\[0\]\.seat: missing"),
        ("seats[0].seat", 0, r"^seats\[0\]\.seat: must be a seat number 1\.\.7, not 0"),
        ("seats[0].seat", True, r"^seats\[0\]\.seat: must be a seat number 1\.\.7, not a boolean"),
        ("seats[0].seat", "1", r"^seats\[0\]\.seat: must be a seat number 1\.\.7, not a string"),
        ("seats[1].seat", 1, r"^seats\[1\]\.seat: seat 1 appears twice"),
        ("seats[0].cards", ..., r"^seats\[0\]\.cards: missing"),
        ("seats[0].wagers", ..., r"^seats\[0\]\.wagers: must be an object, not null"),
        ("seats[0].wagers.ante", ..., r"^seats\[0\]\.wagers\.ante: missing \(the ante is required\)"),
        ("seats[0].wagers.ante", 0, r"^seats\[0\]\.wagers\.ante: missing \(the ante is required\)"),
        ("seats[0].wagers.ante", -500, r"^seats\[0\]\.wagers\.ante: must not be negative"),
        (
            "seats[0].wagers.ante",
            500.0,
            r"^seats\[0\]\.wagers\.ante: must be a whole number of cents, not a fractional",
        ),
        (
            "seats[0].wagers.ante",
            "500",
            r"^seats\[0\]\.wagers\.ante: must be a whole number of cents, not a string",
        ),
        (
            "seats[0].wagers.ante",
            True,
            r"^seats\[0\]\.wagers\.ante: must be a whole number of cents, not a boolean",
        ),
        (
            "seats[0].wagers.ante",
            None,
            r"^seats\[0\]\.wagers\.ante: must be a whole number of cents, not null",
        ),
        (
            "seats[0].wagers.ante",
            MAX_AMOUNT_CENTS + 1,
            r"^seats\[0\]\.wagers\.ante: 100000000001 is above the largest",
        ),
        ("seats[0].wagers.ante", 10**4000, r"^seats\[0\]\.wagers\.ante: .* is above the largest amount"),
        ("seats[0].wagers.play", 500, r"^seats\[0\]\.wagers\.play: unknown wager for high-card-flush"),
        (
            "seats[0].wagers.raise",
            ...,
            r"^seats\[0\]\.wagers\.raise: missing \(a seat that did not fold made its raise\)",
        ),
        (
            "seats[0].wagers.raise",
            1000,
            r"^seats\[0\]\.wagers\.raise: 1000 is outside its limit \(exactly 500 with a 4-card",
        ),
        ("seats[0].wagers.raise", 499, r"^seats\[0\]\.wagers\.raise: 499 is outside its limit"),
        ("seats[1].wagers.raise", 500, r"^seats\[1\]\.wagers\.raise: a folded seat has no raise wager"),
        ("seats[0].folded", "no", r"^seats\[0\]\.folded: must be true or false, not a string"),
        ("seats[0].folded", 0, r"^seats\[0\]\.folded: must be true or false, not a number"),
        ("seats[0].street", "flop", r"^seats\[0\]\.street: only Chase the Flush has streets"),
        ("seats[0].colour", "red", r"^seats\[0\]: unknown field 'colour'"),
        ("community", ["2c", "3c", "4c", "5c"], r"^community: high-card-flush has no community cards"),
        ("dead", "yes", r"^dead: must be true or false"),
        (
            "paytables",
            {"raise": "hcf-flush-house"},
            r"^paytables\.raise: not a bonus wager of high-card-flush",
        ),
        ("paytables", {"flush": "nope"}, r"^paytables\.flush: unknown paytable preset 'nope'"),
        ("paytables", [], r"^paytables: must be an object, not a list"),
        ("banking", "house", r"^banking: must be an object, not a string"),
        ("rake", {"method": "iv", "amount": 100}, r"^rake\.method: must be 'i' \(every player\)"),
        ("rake", {"method": "i"}, r"^rake\.amount: missing"),
        (
            "rake",
            {"method": "i", "amount": 100},
            r"^rake: a rake is taken only in the designated-player mode",
        ),
    ],
)
def test_bad_input_is_refused_naming_the_field_and_the_reason(path: str, value: Any, message: str) -> None:
    with pytest.raises(UserError, match=message):
        parse_round(changed(path, value))


def test_more_seats_than_the_deck_serves_is_refused() -> None:
    obj = copy.deepcopy(GOOD)
    obj["seats"] = [{"seat": n, "cards": [], "wagers": {"ante": 100}} for n in range(1, 8)]
    with pytest.raises(UserError, match=r"^seats: 7 seats, but high-card-flush seats at most 6 players"):
        parse_round(obj)


def test_a_round_that_is_not_an_object_is_refused() -> None:
    with pytest.raises(UserError, match=r"^round: must be an object, not a list"):
        parse_round([])  # type: ignore[arg-type]
