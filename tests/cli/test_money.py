"""controller/money.py: the one formatter of amounts for people."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller.money import MoneyFormat, format_money, money


@pytest.mark.parametrize(
    ("cents", "signed", "text"),
    [
        (0, False, "0.00"),
        (0, True, "0.00"),
        (5, False, "0.05"),
        (5000, False, "50.00"),
        (23100, False, "231.00"),
        (123456789, False, "1,234,567.89"),
        (-500, False, "-5.00"),
        (-500, True, "-5.00"),
        (1000, True, "+10.00"),
        (-100_000_000_000, False, "-1,000,000,000.00"),
    ],
)
def test_amounts_read_as_money(cents: int, signed: bool, text: str) -> None:
    assert money(cents, signed=signed) == text
    assert format_money(cents, signed=signed) == text


def test_a_currency_code_comes_first_and_the_sign_after_it() -> None:
    eur = MoneyFormat("EUR")
    assert eur(123450) == "EUR 1,234.50"
    assert eur(-500) == "EUR -5.00"
    assert eur(500, signed=True) == "EUR +5.00"


@pytest.mark.parametrize("code", ["eur", "EURO", "$", ""])
def test_a_currency_is_an_iso_code(code: str) -> None:
    with pytest.raises(ValueError, match="ISO 4217"):
        MoneyFormat(code)


@pytest.mark.parametrize("value", [5.0, True, "500"])
def test_only_integer_cents_are_formatted(value: object) -> None:
    with pytest.raises(TypeError, match="integer cents"):
        money(value)  # type: ignore[arg-type]


@given(st.integers(min_value=-(10**15), max_value=10**15))
def test_the_text_reads_back_as_the_same_cents(cents: int) -> None:
    text = money(cents, signed=True)
    assert int(text.replace(",", "").replace(".", "").replace("+", "")) == cents
    whole = text.lstrip("+-").split(".")[0]
    assert all(len(group) == 3 for group in whole.split(",")[1:])
