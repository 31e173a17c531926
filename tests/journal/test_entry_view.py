"""The views of stored entries (controller/journal/entry_view.py) against the typed entries they stand
for: the written-out tables are the classes' own (derived here by msgspec's inspection), every view of a
real journal's entries reads field for field what its typed entry reads, a stored part that the typed
entry refuses gets no view, and the one reducer with its gate answers the same through views as through
the typed entries, entry by entry, for every game's faulted sessions (issue 28: `flushtable recall`
folds and gates through views and loads no typed classes)."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from controller.journal import Journal, JournalEntry
from controller.journal import entries as e
from controller.journal.entry_view import (
    KIND_FIELDS,
    PART_FIELDS,
    PART_POSITIONS,
    REASON_FIELDS,
    EntryView,
    PartView,
    ReasonView,
    part_type,
    view_of,
)
from controller.journal.privacy import viewer_event
from controller.journal.state import TableState
from tests.engine.test_autoplay import CONFIGS, play_session
from tests.journal.entry_view_oracle import (
    TYPED_ONLY_KINDS,
    kind_fields,
    part_fields,
    reason_fields,
)


def test_the_written_out_tables_are_the_classes() -> None:
    """After a change to an entry's class: `python -m tests.journal.entry_view_oracle` prints them."""
    assert kind_fields() == KIND_FIELDS
    assert part_fields() == PART_FIELDS
    assert reason_fields() == REASON_FIELDS
    assert set(KIND_FIELDS) == e.KINDS - TYPED_ONLY_KINDS


def test_a_part_is_known_by_its_class_name() -> None:
    """``part_type`` answers by name what ``isinstance`` answered: no part's class has a subclass, and the
    parts that name positions are the ones whose ``positions`` is their own."""
    parts = {cls.PRIVATE for cls in e.ENTRY_CLASSES if cls.PRIVATE is not None}
    for part in parts:
        assert not [other for other in parts if other is not part and issubclass(other, part)]
        overrides = part.positions is not e.Part.positions
        assert overrides == (part.__name__ in PART_POSITIONS), part.__name__


def _same(view_value: Any, typed_value: Any) -> None:
    if isinstance(view_value, ReasonView):
        assert isinstance(typed_value, e.Reason)
        for attribute, *_ in REASON_FIELDS:
            assert getattr(view_value, attribute) == getattr(typed_value, attribute)
        return
    assert type(view_value) is type(typed_value)
    assert view_value == typed_value


def assert_reads_as(view: EntryView, typed: e.Entry) -> None:
    """Every field the typed entry has, read the same through the view (its private part too)."""
    assert view.kind == typed.kind
    for attribute, *_ in KIND_FIELDS[view.kind]:
        if attribute != "private":
            _same(getattr(view, attribute), getattr(typed, attribute))
    typed_part = typed.private_part()
    view_part = view.private_part()
    if typed_part is None:
        assert view_part is None
        return
    assert isinstance(view_part, PartView)
    assert part_type(view_part) == part_type(typed_part) == type(typed_part).__name__
    for attribute, *_ in PART_FIELDS[view_part.part_type]:
        _same(getattr(view_part, attribute), getattr(typed_part, attribute))
    assert view_part.positions() == typed_part.positions()


def _journal_of_a_session(name: str, seed: int, tmp_path: Path) -> list[JournalEntry]:
    """A faulted session's journal, read back: settled rounds, dead hands and dead rounds, faults."""
    table = play_session(CONFIGS[name], rounds=12, seed=seed, fault_rate=0.2)
    path = tmp_path / f"{name}-{seed}.sqlite"
    with Journal.open(path, table.engine.view().config.table_id, synchronous="OFF") as journal:
        journal.append_many(table.journal())
        return list(journal.entries())


def _fresh(entries: list[JournalEntry]) -> list[JournalEntry]:
    """The same stored entries with nothing decoded yet (a view and a typed entry made once each)."""
    return [
        JournalEntry(
            x.seq,
            x.time_utc,
            x.table_id,
            x.round_id,
            x.source,
            x.kind,
            x.version,
            x.public,
            x.private,
            x.private_text,
            x.private_digest,
            x.prev_hash,
            x.hash,
            x.stored_text,
        )
        for x in entries
    ]


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_every_view_of_a_journal_reads_as_its_typed_entry_and_the_gate_agrees(
    name: str, tmp_path: Path
) -> None:
    stored = _journal_of_a_session(name, seed=5, tmp_path=tmp_path)
    viewed = 0
    for entry in _fresh(stored):
        view = view_of(entry.kind, entry.public, entry.private)
        if entry.kind in TYPED_ONLY_KINDS:
            assert view is None
            continue
        assert view is not None, entry.kind
        assert_reads_as(view, entry.entry)
        viewed += 1
    assert viewed > 100
    # The one reducer and its gate, step by step: through the views, as through the typed entries.
    by_views, by_types = TableState(views=True), TableState()
    seen_views, seen_types = _fresh(stored), _fresh(stored)
    shown = 0
    for step, (as_view, as_typed) in enumerate(zip(seen_views, seen_types, strict=True)):
        by_views.apply(as_view)
        by_types.apply(as_typed)
        # Every entry of the round so far, gated now: a card shows through both or through neither.
        round_id = as_typed.round_id
        # (An entry outside a round is judged alone: its private part is never shown.)
        earlier = (
            [step] if round_id is None else [i for i in range(step + 1) if seen_types[i].round_id == round_id]
        )
        for i in earlier:
            through_views = viewer_event(seen_views[i], by_views)
            assert through_views == viewer_event(seen_types[i], by_types)
            shown += through_views["private"] is not None
    assert shown > 0
    statuses = {s.status for s in by_types.rounds.values()}
    assert "settled" in statuses, statuses
    assert by_views.meters.to_json() == by_types.meters.to_json()
    assert by_views.closed_rounds == by_types.closed_rounds
    assert set(by_views.latched_faults) == set(by_types.latched_faults)
    assert {r: s.dead_seats for r, s in by_views.rounds.items()} == {
        r: s.dead_seats for r, s in by_types.rounds.items()
    }


def _mutations(public: dict[str, Any], rng: random.Random) -> list[dict[str, Any]]:
    """The public part with one thing wrong or changed: a field dropped, a field it does not have, a
    value of another type."""
    out: list[dict[str, Any]] = [{**public, "no_such_field": 1}]
    for name, value in public.items():
        out.append({k: v for k, v in public.items() if k != name})
        for other in (None, True, 0, 1.5, "text", [], {}, [1], {"k": 1}, rng.choice([-1, "x"])):
            if type(other) is not type(value) or other != value:
                out.append({**public, name: other})
    return out


def test_a_stored_part_the_typed_entry_refuses_gets_no_view_and_what_it_reads_reads_the_same(
    tmp_path: Path,
) -> None:
    """Each kind's stored public parts, changed one field at a time: where the typed entry refuses one,
    there is no view (the reader then decodes the typed entry, which refuses it as ever); where it reads
    one, the view reads the same."""
    stored = _journal_of_a_session("chase", seed=9, tmp_path=tmp_path)
    rng = random.Random(28)
    samples: dict[str, JournalEntry] = {}
    for entry in stored:
        if entry.kind in KIND_FIELDS:
            samples.setdefault(entry.kind, entry)
    checked = refused = 0
    for kind, entry in sorted(samples.items()):
        for public in _mutations(entry.public, rng):
            try:
                typed = e.from_parts(kind, public, entry.private)
            except e.EntryError:
                typed = None
            view = view_of(kind, public, entry.private)
            if typed is None:
                assert view is None, (kind, public)
                refused += 1
            elif view is not None:
                assert_reads_as(view, typed)
            checked += 1
    assert checked > 200
    assert refused > 100


def test_a_view_shares_no_typed_container_with_its_stored_entry(tmp_path: Path) -> None:
    """A dict or list field is made anew, as msgspec makes the typed entry's."""
    stored = _journal_of_a_session("hcf-house", seed=3, tmp_path=tmp_path)
    started = next(x for x in stored if x.kind == "round_started")
    view = view_of(started.kind, started.public, started.private)
    assert view is not None
    assert view.seats == started.public["seats"]
    assert view.seats is not started.public["seats"]
    assert view.banking is not started.public["banking"]
