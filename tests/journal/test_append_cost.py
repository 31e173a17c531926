"""The journal's append does its per-entry work once (issue 28 item 3): one conversion of each entry to
JSON values, no JSON encoder built per entry, the batch's shared columns hashed once; and the faster
paths make the same bytes as the documented formulas (docs/journal.md "The hash chain")."""

from __future__ import annotations

import io
import json
import json.encoder
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import pytest
import structlog
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.journal import Journal
from controller.journal import entries as typed
from controller.journal.chain import batch_hasher, canonical_json
from controller.journal.verify import verify_chain
from controller.logs import configure_logging
from tests.journal.test_chain import reference_hash

TEXT = st.text(st.characters(exclude_categories=["Cs"]), max_size=12)
JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | TEXT,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(TEXT, children, max_size=4),
    max_leaves=16,
)
HEX = st.text("0123456789abcdef", min_size=64, max_size=64)


def _standard_canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


@settings(max_examples=300, deadline=None)
@given(value=JSON_VALUES)
def test_canonical_json_is_the_standard_librarys_sorted_compact_text(value: Any) -> None:
    """canonical_json's encoder built once gives json.dumps's bytes (floats, big integers, control
    characters, any Unicode)."""
    assert canonical_json(value) == _standard_canonical(value)


@settings(max_examples=300, deadline=None)
@given(
    prev_hash=HEX,
    seq=st.integers(min_value=1, max_value=2**53),
    time_utc=TEXT,
    table_id=TEXT,
    round_id=st.none() | TEXT,
    source=TEXT,
    kind=TEXT,
    version=st.integers(min_value=1, max_value=9),
    payload=st.dictionaries(TEXT, JSON_VALUES, max_size=4),
    private_digest=st.none() | HEX,
)
def test_batch_hasher_is_the_documented_formula(  # noqa: PLR0917 - hypothesis' keywords
    prev_hash: str,
    seq: int,
    time_utc: str,
    table_id: str,
    round_id: str | None,
    source: str,
    kind: str,
    version: int,
    payload: dict[str, Any],
    private_digest: str | None,
) -> None:
    entry_hash = batch_hasher(time_utc=time_utc, table_id=table_id, version=version)
    hashed = entry_hash(prev_hash, seq, round_id, source, kind, canonical_json(payload), private_digest)
    assert hashed == reference_hash(
        prev_hash,
        seq=seq,
        time_utc=time_utc,
        table_id=table_id,
        round_id=round_id,
        source=source,
        kind=kind,
        version=version,
        payload=payload,
        private_digest=private_digest,
    )


@settings(max_examples=200, deadline=None)
@given(part=st.dictionaries(TEXT, JSON_VALUES, max_size=5), salt=st.binary(min_size=16, max_size=16))
def test_a_sealed_private_part_is_the_canonical_object(part: dict[str, Any], salt: bytes) -> None:
    assert typed.seal_private(part, salt) == _standard_canonical({"part": part, "salt": salt.hex()})


def _entries() -> list[tuple[str, typed.Entry, str | None, str]]:
    """A round's worth of appends: cards (a private part each), chips and states (none)."""
    out: list[tuple[str, typed.Entry, str | None, str]] = []
    for index in range(12):
        card = typed.build("card_dealt", {"position": index % 4, "index": index // 4, "card": "As"})
        out.append(("card_dealt", card, None, "shuffler"))
        bet = typed.build(
            "bet_changed",
            {"seat": 1 + index % 6, "wager": "ante", "amount_cents": 500, "chip_count": 5, "locked": False},
        )
        out.append(("bet_changed", bet, None, "sensors"))
    return out


def _counting(monkeypatch: pytest.MonkeyPatch, owner: object, name: str) -> list[int]:
    calls = [0]
    original: Callable[..., Any] = getattr(owner, name)

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        return original(*args, **kwargs)

    monkeypatch.setattr(owner, name, counted)
    return calls


def test_an_append_builds_no_json_encoder_per_entry(
    journal_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """json.JSONEncoder.encode builds a C encoder on every call; the journal built one per entry and
    one more per private part (measured: a tenth of the append's Python work)."""
    # At warning, as bench_table runs the daemon: the info lines (JSON, written) are not the journal's.
    configure_logging(level="warning", stream=io.StringIO())
    items = _entries()
    with Journal.open(journal_path, "T1") as journal:
        built = _counting(monkeypatch, json.encoder, "c_make_encoder")
        journal.append_many(items)
        monkeypatch.undo()
    assert built[0] == 0
    assert verify_chain(journal_path).summary() == f"ok {len(items)} entries"


def test_each_entry_is_converted_to_json_values_once(
    journal_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An entry's public and private parts come from one msgspec conversion: converting the entry for
    its public part converted the private part too, and the private part was converted again."""
    items = _entries()
    with Journal.open(journal_path, "T1") as journal:
        converted = _counting(monkeypatch, msgspec, "to_builtins")
        written = journal.append_many(items)
        monkeypatch.undo()
    assert converted[0] == len(items)
    # What the entries hold is what a reader reads back.
    with Journal.open_existing(journal_path) as reader:
        stored = list(reader.entries())
    assert [(entry.public, entry.private) for entry in written] == [
        (entry.public, entry.private) for entry in stored
    ]
    assert [entry.private is not None for entry in stored] == [kind == "card_dealt" for kind, *_ in items]


def test_above_info_an_append_binds_no_logger(journal_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """At warning (a quiet daemon's level, bench_table's) the entries' info lines are written nowhere:
    the append asks the configured logger class, and binds no logger per commit to find that out. At
    info it binds one per commit and writes every entry."""
    stream = io.StringIO()
    configure_logging(level="warning", stream=stream)
    items = _entries()
    with Journal.open(journal_path, "T1") as journal:
        binds = _counting(monkeypatch, structlog.BoundLoggerBase, "bind")
        proxy_binds = _counting(monkeypatch, structlog._config.BoundLoggerLazyProxy, "bind")
        for item in items[:6]:
            journal.append_many([item])
        assert (binds[0], proxy_binds[0]) == (0, 0)
        configure_logging(level="info", stream=stream)
        journal.append_many(items[6:])
        assert proxy_binds[0] == 1
    assert [json.loads(line)["journal_seq"] for line in stream.getvalue().splitlines()] == list(
        range(7, len(items) + 1)
    )
