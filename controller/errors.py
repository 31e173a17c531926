"""Errors a user can cause. The CLI prints them as one line and exits 2; never a traceback."""


class UserError(Exception):
    """Bad input from a person or a file: the message names the field and the reason."""


class CardError(UserError):
    """Something that is not a card, or a card seen twice."""
