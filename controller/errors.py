"""Errors a user can cause. The CLI prints them as one line and exits 2; never a traceback."""


class UserError(Exception):
    """Bad input from a person or a file: the message names the field and the reason."""


class ServerError(UserError):
    """A server could not be reached as it must be, or (the floor's harness) started or stopped: a missing
    binary, a port taken, a bad config, a version too old."""


class CardError(UserError):
    """Something that is not a card, or a card seen twice."""


def shown(value: object, limit: int = 40) -> str:
    """A bad value as an error message quotes it: repr, cut to ``limit`` characters, on one line, and
    never a 5,000-digit number (which Python refuses to turn into text at all)."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 64:
        digits = len(str(value)) if value.bit_length() < 10_000 else "many"
        return f"a {digits}-digit number"
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
