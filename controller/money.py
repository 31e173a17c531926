"""Amounts as people read them: integer cents in, ``"1,234.50"`` out (docs/operations.md "Money").

The journal, JSON and every computation keep integer cents; this is the one place that turns them into
text for staff (the terminal, recall, integrity, ``settle --text``). Decisions:

- two decimals always (``50.00``, never ``50``), a comma between thousands (``12,345.00``): what a
  cage slip and a pit-stand screen show;
- a negative amount has a leading minus (``-5.00``); ``signed=True`` adds ``+`` to a positive one, for
  nets (``+10.00``; zero stays ``0.00``);
- the property's currency (docs/configuration.md "[property]"), when one is given, is its ISO 4217 code
  before the amount, the sign after the code (``EUR 1,234.50``, ``EUR -5.00``): a code is unambiguous
  across sites; or, where the property sets ``currency_symbol``, that symbol after the sign
  (``€1,234.50``, ``-€5.00``). With neither the amount stands alone, in the table's currency by
  definition;
- ``decimals`` is the currency's minor unit: the integers are in that unit (cents for EUR, yen for JPY
  with 0 decimals: ``¥1,234``, never ``¥12.34``).

No import beyond the standard library: every command that prints money loads this, the fast ones too.
"""

from __future__ import annotations

import re

from table_names.records import FrozenRecord

_CURRENCY_CODE = re.compile(r"^[A-Z]{3}\Z")  # \Z, not $: `$` also matches before a final line break


class MoneyFormat(FrozenRecord):
    """How the property writes its amounts: ``currency`` an ISO 4217 code such as ``"EUR"`` written
    before the amount, or None; ``symbol`` (``"€"``) written instead of a code; ``decimals`` the minor
    unit's places (2; 0 for JPY). A plain record, not a dataclass: every fast command loads it."""

    __slots__ = ("currency", "decimals", "symbol")
    currency: str | None
    symbol: str | None
    decimals: int

    def __init__(self, currency: str | None = None, symbol: str | None = None, decimals: int = 2) -> None:
        if currency is not None and not _CURRENCY_CODE.match(currency):
            raise ValueError(f"currency: {currency!r} is not a three-letter ISO 4217 code like 'EUR'")
        if isinstance(decimals, bool) or not 0 <= decimals <= MAX_DECIMALS:
            raise ValueError(f"decimals: from 0 to {MAX_DECIMALS}, not {decimals!r}")
        object.__setattr__(self, "currency", currency)
        object.__setattr__(self, "symbol", symbol)
        object.__setattr__(self, "decimals", decimals)

    def __call__(self, cents: int, *, signed: bool = False) -> str:
        return format_money(
            cents, currency=self.currency, signed=signed, symbol=self.symbol, decimals=self.decimals
        )


MAX_DECIMALS = 3


def format_money(
    cents: int,
    *,
    currency: str | None = None,
    signed: bool = False,
    symbol: str | None = None,
    decimals: int = 2,
) -> str:
    """``123456`` -> ``"1,234.56"``; ``-500`` -> ``"-5.00"``; ``signed``: ``1000`` -> ``"+10.00"``;
    ``currency="EUR"``: ``"EUR 1,234.56"``; ``symbol="€"``: ``"€1,234.56"``, ``"-€5.00"``;
    ``decimals=0``: ``123456`` -> ``"123,456"`` (the integer is in the currency's minor unit)."""
    if isinstance(cents, bool) or not isinstance(cents, int):
        # A float here would be a bug upstream (money is integer cents); say so rather than round it.
        raise TypeError(f"an amount is integer cents, not {type(cents).__name__}")
    sign = "-" if cents < 0 else ("+" if signed and cents > 0 else "")
    if decimals:
        whole, part = divmod(abs(cents), 10**decimals)
        digits = f"{whole:,}.{part:0{decimals}d}"
    else:
        digits = f"{abs(cents):,}"
    if symbol is not None:
        return f"{sign}{symbol}{digits}"
    amount = f"{sign}{digits}"
    return amount if currency is None else f"{currency} {amount}"


money = MoneyFormat()
"""The formatter with no currency code: ``money(2500)`` -> ``"25.00"``."""
