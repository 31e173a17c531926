"""The pit map's tiles (docs/floor.md "The pit map"): where each table stands, from the floor file's
``[[pits]]``, and what its tile says, in words, from the floor's rows. Pure: the panel reads
PostgreSQL and hands the rows in; the clock is the caller's.

Every time the floor panel shows goes through :func:`time_text` and every amount through the panel's
one ``MoneyFormat`` (controller/money.py): the property's zone and currency plug in there, nowhere else.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, tzinfo
from typing import Any

from controller.journal.render import game_title, phase_words
from controller.locale import DEFAULT_PROPERTY, PropertySettings, duration_text, shift_bounds, shift_of
from controller.money import MoneyFormat, money

MAX_PIT_ROWS = 20
MAX_PIT_COLUMNS = 20
UNPLACED_PIT = "Not placed"  # the heading of tables the floor file places in no pit


@dataclass(frozen=True)
class PitLayout:
    """One pit as the floor file lays it out: ``rows`` as seen from the pit stand, each a list of table
    ids, ``""`` an empty place (an aisle, a closed table's spot)."""

    name: str
    rows: tuple[tuple[str, ...], ...]

    def places(self) -> Iterable[tuple[str, int, int]]:
        """(table, row, column), both from 1 (CSS grid lines), for every placed table."""
        for row_index, row in enumerate(self.rows, start=1):
            for column_index, table_id in enumerate(row, start=1):
                if table_id:
                    yield table_id, row_index, column_index

    @property
    def columns(self) -> int:
        return max((len(row) for row in self.rows), default=1)


def time_text(moment: datetime | str | None, *, with_date: bool = False, zone: tzinfo = UTC) -> str:
    """The floor panel's one way to write a time: ``14:05:31 UTC`` (``2026-12-05 14:05:31 UTC`` with
    the date), in ``zone`` and naming it (``15:05:31 CET``). A journal time (``...Z``) or an aware
    datetime; a missing one is a dash."""
    if moment is None or moment == "":
        return "—"
    if isinstance(moment, str):
        try:
            parsed = datetime.fromisoformat(moment.replace("Z", "+00:00"))
        except ValueError:
            return moment
        moment = parsed
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    shown = moment.astimezone(zone)
    return shown.strftime("%Y-%m-%d %H:%M:%S %Z" if with_date else "%H:%M:%S %Z")


def age_words(seconds: float | None) -> str:
    """How long ago, as the floor says it: ``12 s ago``, ``4 min ago``, ``2 h 5 min ago``."""
    if seconds is None:
        return "never"
    return f"{duration_text(max(0, int(seconds)))} ago"


@dataclass(frozen=True)
class Shift:
    name: str
    start: datetime
    end: datetime


def current_shift(now: datetime, prop: PropertySettings = DEFAULT_PROPERTY) -> Shift:
    """The shift ``now`` is in: the property's shifts in its zone (controller/locale.py), the one
    definition the table panel's meters and the floor's queries use too."""
    day, name = shift_of(now, prop)
    start, end = shift_bounds(day, name, prop)
    return Shift(name, start, end)


def _percent(part: int, whole: int) -> str:
    return "—" if whole == 0 else f"{100 * part / whole:.1f}%"


@dataclass
class TileText:
    """What a tile says, in words, computed once here for the page and for its live stream."""

    fmt: MoneyFormat = money
    time: Callable[..., str] = time_text
    now: datetime = field(default_factory=lambda: datetime.now(UTC))

    def tile(self, row: Mapping[str, Any], shift: Mapping[str, Any] | None) -> dict[str, Any]:
        """A floor_map row (controller/floor/queries.py) and its shift's figures, as the tile shows them."""
        quarantined, held = bool(row.get("quarantined")), bool(row.get("held"))
        heard = row.get("last_heard_utc")
        age = row.get("last_heard_age_s")  # PostgreSQL's (its clock wrote the time), else ours
        if age is not None:
            age_s: float | None = float(age)
        else:
            age_s = (self.now - heard).total_seconds() if isinstance(heard, datetime) else None
        rounds = int((shift or {}).get("rounds") or 0)
        handle = int((shift or {}).get("handle_cents") or 0)
        win = int((shift or {}).get("house_win_cents") or 0)
        theoretical = int((shift or {}).get("theoretical_win_cents") or 0)
        # A quarantined or held tile says why it stands still, never its last phase frozen.
        if quarantined:
            state, phase = "quarantined", "the floor takes nothing after its bad entry"
        elif held:
            state, phase = "held", "no round starts until its fault is cleared"
        else:
            state = f"{row['alerts']} alert(s)" if row.get("alerts") else "ok"
            # Closed only when the table said so (table_closed); one that never said (None): its phase.
            closed = row.get("table_open") is False
            phase = "table closed" if closed else phase_words(str(row.get("phase") or ""))
        return {
            **{key: value for key, value in row.items() if not isinstance(value, datetime)},
            "state": state,
            "game_title": game_title(row.get("game")) if row.get("game") else "no game yet",
            "phase_text": phase,
            "hold_reason": (
                str(row.get("quarantine_reason") or "") if quarantined else str(row.get("hold_reason") or "")
            ),
            "last_heard_text": age_words(age_s),
            "last_heard_at": self.time(heard, with_date=True) if heard else "",
            "shift_rounds": rounds,
            "shift_text": (
                f"{rounds} round{'s' if rounds != 1 else ''} · win {self.fmt(win, signed=True)} "
                f"(theo. {self.fmt(theoretical, signed=True)})"
            ),
            "hold_text": f"hold {_percent(win, handle)} (theo. {_percent(theoretical, handle)})",
        }


def pit_map(tiles: Sequence[Mapping[str, Any]], layout: Sequence[PitLayout]) -> list[dict[str, Any]]:
    """The pits in the file's order, each with its tiles and their places; the tables the file places
    nowhere after them, by their floor_table_config pit, in a plain row (a new table shows at once)."""
    by_id = {str(t["table_id"]): t for t in tiles}
    placed: set[str] = set()
    pits: list[dict[str, Any]] = []
    for pit in layout:
        spots = []
        for table_id, row, column in pit.places():
            placed.add(table_id)
            spots.append({"table_id": table_id, "row": row, "column": column, "tile": by_id.get(table_id)})
        pits.append({"name": pit.name, "columns": pit.columns, "spots": spots})
    rest = [t for t in tiles if str(t["table_id"]) not in placed]
    if rest:
        spots = [{"table_id": str(t["table_id"]), "row": None, "column": None, "tile": t} for t in rest]
        pits.append({"name": UNPLACED_PIT if layout else "", "columns": 0, "spots": spots})
    return pits
