"""Finding a round's cards in text a viewer was shown, in any encoding, without false alarms.

A *mention* is something in a text that names a card (or a dealt card's place); a mention is a *leak*
when it matches a card of a round that may not be shown yet at the moment the text was emitted, and
no card that may be shown explains it. The rules:

Encodings (each found in JSON values, JSON-in-text, free text, and HTML both raw and as rendered text):

- **code**: rank then suit, ``Qd``, ``Ts`` — case-sensitive and delimited: neither side may touch a
  letter, a digit, ``_`` or ``-`` (so hex hashes, round ids like ``RHCF1-...``, CSRF tokens and words
  such as ``Adds`` never match; ``"Qd"``, ``Qd,`` and ``>Qd<`` do);
- **symbol**: rank then suit symbol as a page renders it, ``Q♦``, ``10♠`` (HTML tags removed first:
  ``Q<span class="suit">♦</span>`` reads ``Q♦``);
- **number** (0..51, controller/rules/cards.py), only in a card context: a JSON key ``card`` or
  ``cards``, one ending ``_card``/``_cards``, or ``missing``/``extra`` (the shoe's deck report), holding
  the number or a list of numbers; free text ``card 23`` (``as card 9``), or ``"card": 23`` in text.
  ``at card 4`` is not a card: it is the shoe's count of cards into its deal (sim_devices/shuffler.py's
  fault detail ``at card 4, position 1 index 4``), so it is left out; ``6 cards`` is a count;
- **slot**: a dealt card's place, ``position P`` then ``index I`` in text (``position 1 index 4``,
  ``position 1: index 0``) or ``index I at position P``, or one JSON object holding an integer
  ``position`` and an integer ``index``. A slot only matches a card dealt there: the shoe's ``at card
  4, position 1 index 4`` for a card it never dealt matches nothing.

Attribution (which rounds a mention can be about): a JSON object with a ``round_id`` of a known round
attributes everything inside it to that round (an SSE event, an /api/journal or recall record, a log
line, a ``journal show --json`` line; a ``journal show`` text line by its round column). Anything else
— HTML pages, recall's text, a log line outside a round — is *unattributed*: it can be about any round
started by then.

A mention emitted at watermark ``H`` (the journal's last committed seq read just after the text was
received, so the text was produced no later than ``H``) is a leak when, among the rounds it can be about,
some card it matches is not public at ``H`` (rounds.py: before its reveal, or never) and no card it
matches is public at ``H``. So a code that an earlier revealed round showed is never blamed on the
round in play when the text cannot say which round it is about, while text about the round in play
(its round_id) is held to that round's cards alone.
"""

from __future__ import annotations

import functools
import html
import json
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from controller.rules.cards import DECK_SIZE, RANKS, SUITS
from tests.privacy.rounds import CARD_IN_TEXT_RE, DealtCard, TableCards

Encoding = Literal["code", "symbol", "number", "slot"]

_EDGE = r"A-Za-z0-9_\-"
CODE_RE = re.compile(rf"(?<![{_EDGE}])([{RANKS}][{SUITS}])(?![{_EDGE}])")
_SYMBOLS = {"♣": "c", "♦": "d", "♥": "h", "♠": "s"}
SYMBOL_RE = re.compile(r"(?<![A-Za-z0-9])(10|[2-9TJQKA])\s*([♣♦♥♠])")
NUMBER_TEXT_RES = (
    CARD_IN_TEXT_RE,
    re.compile(r'"(?:card|[A-Za-z_]*_card)"\s*:\s*(\d{1,2})(?![\d.])'),
)
SLOT_TEXT_RES = (
    (re.compile(r"\bposition\s*[:=]?\s*(\d{1,2})\b[\s,:;]*index\s*[:=]?\s*(\d{1,2})\b"), False),
    (re.compile(r"\bindex\s*[:=]?\s*(\d{1,2})\b[\s,]*(?:at\s+)?position\s*[:=]?\s*(\d{1,2})\b"), True),
)
FLAT_OBJECT_RE = re.compile(r"\{[^{}]*\}")
_TAG_RE = re.compile(r"<[^>]*>")
_SCRIPT_STYLE_RE = re.compile(r"<(script|style)\b.*?</\1>", re.DOTALL | re.IGNORECASE)
_NUMBER_KEYS = frozenset({"card", "cards", "missing", "extra"})


@dataclass(frozen=True, slots=True)
class Mention:
    encoding: Encoding
    value: str | int | tuple[int, int]  # "Qd" | 23 | (position, index)
    round_id: str | None  # the round the text is about; None: unattributed
    snippet: str

    def matches(self, card: DealtCard) -> bool:
        if self.encoding in ("code", "symbol"):
            return card.code == self.value
        if self.encoding == "number":
            return card.number == self.value
        return (card.position, card.index) == self.value


@dataclass(frozen=True, slots=True)
class Leak:
    mention: Mention
    cards: tuple[DealtCard, ...]  # the hidden cards it names


def _snippet(text: str, start: int, end: int, width: int = 60) -> str:
    left = max(0, start - width)
    return " ".join(text[left : end + width].split())


def _is_number_key(key: str) -> bool:
    return key in _NUMBER_KEYS or key.endswith(("_card", "_cards"))


def _card_number(value: Any) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < DECK_SIZE:
        return value
    return None


def text_mentions(text: str, round_id: str | None) -> Iterator[Mention]:
    """Mentions in free text (including JSON written out as text)."""
    if len(text) <= _CACHED_TEXT_CHARS:
        yield from _short_text_mentions(text, round_id)
    else:
        yield from _text_mentions(text, round_id)


# The same short strings (a journal entry's values, read on every channel at every step) are searched
# over and over by the privacy property: their mentions are kept, not searched for again. Mentions are
# immutable and a string's depend on the string and the round alone.
_CACHED_TEXT_CHARS = 2048


@functools.lru_cache(maxsize=1 << 14)
def _short_text_mentions(text: str, round_id: str | None) -> tuple[Mention, ...]:
    return tuple(_text_mentions(text, round_id))


def _text_mentions(text: str, round_id: str | None) -> Iterator[Mention]:
    for match in CODE_RE.finditer(text):
        yield Mention("code", match.group(1), round_id, _snippet(text, match.start(), match.end()))
    for match in SYMBOL_RE.finditer(text):
        rank = "T" if match.group(1) == "10" else match.group(1)
        code = rank + _SYMBOLS[match.group(2)]
        yield Mention("symbol", code, round_id, _snippet(text, match.start(), match.end()))
    for pattern in NUMBER_TEXT_RES:
        for match in pattern.finditer(text):
            number = _card_number(int(match.group(1)))
            if number is not None:
                yield Mention("number", number, round_id, _snippet(text, match.start(), match.end()))
    for pattern, reversed_ in SLOT_TEXT_RES:
        for match in pattern.finditer(text):
            first, second = int(match.group(1)), int(match.group(2))
            slot = (second, first) if reversed_ else (first, second)
            yield Mention("slot", slot, round_id, _snippet(text, match.start(), match.end()))
    for match in FLAT_OBJECT_RE.finditer(text):
        try:
            value = json.loads(match.group(0))
        except ValueError:
            continue
        if isinstance(value, dict):
            yield from _object_mentions(value, round_id, match.group(0), text_values=False)


def json_mentions(value: Any, round_id: str | None, known_rounds: Sequence[str] = ()) -> Iterator[Mention]:
    """Mentions in a JSON value; an object's ``round_id`` (a known round) attributes what it holds."""
    if isinstance(value, dict):
        own = value.get("round_id")
        if isinstance(own, str) and own in known_rounds:
            round_id = own
        # What it shows in a failure's message: written out only for an object that mentions a card.
        yield from _object_mentions(value, round_id, lambda: json.dumps(value)[:200], text_values=False)
        for item in value.values():
            yield from json_mentions(item, round_id, known_rounds)
    elif isinstance(value, list):
        for item in value:
            yield from json_mentions(item, round_id, known_rounds)
    elif isinstance(value, str):
        yield from text_mentions(value, round_id)


def _object_mentions(
    value: dict[str, Any], round_id: str | None, shown: str | Callable[[], str], *, text_values: bool
) -> Iterator[Mention]:
    """``shown``: the object as a failure quotes it, or how to write it (only when a card is found)."""
    position, index = value.get("position"), value.get("index")
    if (
        isinstance(position, int)
        and isinstance(index, int)
        and not isinstance(position, bool)
        and not isinstance(index, bool)
    ):
        yield Mention("slot", (position, index), round_id, shown if isinstance(shown, str) else shown())
    for key, item in value.items():
        if not _is_number_key(str(key)):
            continue
        for candidate in item if isinstance(item, list) else [item]:
            number = _card_number(candidate)
            if number is not None:
                quoted = shown if isinstance(shown, str) else shown()
                yield Mention("number", number, round_id, f'"{key}": {json.dumps(item)} in {quoted}')


def html_mentions(page: str) -> Iterator[Mention]:
    """An HTML page: its markup (attributes such as data-card) and its text as rendered."""
    without_code = _SCRIPT_STYLE_RE.sub(" ", page)
    yield from text_mentions(without_code, None)
    rendered = html.unescape(_TAG_RE.sub("", without_code))
    for mention in text_mentions(rendered, None):
        if mention.encoding == "symbol":
            yield mention


def leaks_in(mentions: Iterator[Mention], table: TableCards, watermark: int) -> list[Leak]:
    """The mentions that name a card hidden at ``watermark`` and no card shown by then (module doc)."""
    started = table.started_by(watermark)
    found: list[Leak] = []
    seen: set[tuple[str, str | int | tuple[int, int], str | None]] = set()
    for mention in mentions:
        key = (mention.encoding, mention.value, mention.round_id)
        if key in seen:
            continue
        seen.add(key)
        if mention.round_id is not None and mention.round_id in table.rounds:
            candidates = [table.rounds[mention.round_id]]
        else:
            candidates = started
        hidden: list[DealtCard] = []
        explained = False
        for round_ in candidates:
            for card in round_.cards:
                if not mention.matches(card):
                    continue
                if card.public_at(watermark):
                    explained = True
                else:
                    hidden.append(card)
        if hidden and not explained:
            found.append(Leak(mention, tuple(hidden)))
    return found
