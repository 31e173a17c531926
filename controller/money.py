"""Amounts as people read them: integer cents in, ``"1,234.50"`` out (docs/operations.md "Money").

The journal, JSON and every computation keep integer cents; this is the one place that turns them into
text for staff (the terminal, recall, integrity, ``settle --text``). Decisions:

- two decimals always (``50.00``, never ``50``), a comma between thousands (``12,345.00``): what a
  cage slip and a pit-stand screen show;
- a negative amount has a leading minus (``-5.00``); ``signed=True`` adds ``+`` to a positive one, for
  nets (``+10.00``; zero stays ``0.00``);
- the table's currency, when one is given, is its ISO 4217 code before the amount, the sign after the
  code (``EUR 1,234.50``, ``EUR -5.00``): a code is unambiguous across sites, a symbol (``$``) is not.
  With no currency the amount stands alone, in the table's currency by definition.

No import beyond the standard library: every command that prints money loads this, the fast ones too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_CURRENCY_CODE = re.compile(r"^[A-Z]{3}$")


@dataclass(frozen=True, slots=True)
class MoneyFormat:
    """How one table writes its amounts: ``currency`` is an ISO 4217 code such as ``"EUR"`` or None."""

    currency: str | None = None

    def __post_init__(self) -> None:
        if self.currency is not None and not _CURRENCY_CODE.match(self.currency):
            raise ValueError(f"currency: {self.currency!r} is not a three-letter ISO 4217 code like 'EUR'")

    def __call__(self, cents: int, *, signed: bool = False) -> str:
        return format_money(cents, currency=self.currency, signed=signed)


def format_money(cents: int, *, currency: str | None = None, signed: bool = False) -> str:
    """``123456`` -> ``"1,234.56"``; ``-500`` -> ``"-5.00"``; ``signed``: ``1000`` -> ``"+10.00"``;
    ``currency="EUR"``: ``"EUR 1,234.56"``."""
    if isinstance(cents, bool) or not isinstance(cents, int):
        # A float here would be a bug upstream (money is integer cents); say so rather than round it.
        raise TypeError(f"an amount is integer cents, not {type(cents).__name__}")
    sign = "-" if cents < 0 else ("+" if signed and cents > 0 else "")
    whole, part = divmod(abs(cents), 100)
    amount = f"{sign}{whole:,}.{part:02d}"
    return amount if currency is None else f"{currency} {amount}"


money = MoneyFormat()
"""The formatter with no currency code: ``money(2500)`` -> ``"25.00"``."""
