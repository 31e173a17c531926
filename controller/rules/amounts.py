"""Amounts of money as the rules engine accepts them: whole cents, never a float, never a boolean."""

from __future__ import annotations

from controller.errors import UserError, shown

MAX_AMOUNT_CENTS = 100_000_000_000  # one billion in the table's currency: anything above is a typo


def type_name(value: object) -> str:
    """What a JSON value is, in words, for error messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "a number"
    if isinstance(value, float):
        return "a fractional number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list | tuple):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def check_cents(value: object, field: str) -> int:
    """``value`` as cents: a whole number from 0 to MAX_AMOUNT_CENTS; otherwise UserError naming ``field``."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise UserError(f"{field}: must be a whole number of cents, not {type_name(value)} {shown(value)}")
    if value < 0:
        raise UserError(f"{field}: must not be negative, not {shown(value)}")
    if value > MAX_AMOUNT_CENTS:
        raise UserError(f"{field}: {shown(value)} is above the largest amount accepted ({MAX_AMOUNT_CENTS})")
    return value


def check_positive_cents(value: object, field: str) -> int:
    """Whole cents of at least 1: a limit, a cap or a minimum of 0 would refuse or pay nothing at all. The
    configuration, the engine's table and ``flushtable settle`` refuse a 0 in these same words."""
    cents = check_cents(value, field)
    if cents == 0:
        raise UserError(
            f"{field}: must be at least 1 cent (0 would allow or pay nothing; leave it out for none)"
        )
    return cents
