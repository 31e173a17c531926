"""A stored row whose parts cannot be read (a private part that is not JSON, a public part that is not a
JSON object: a damaged file's) is one ``JournalError`` naming the journal and the entry's seq, in the
same words whichever reader meets it: the paged read (``entries``), the last entries (recall's
``--last``), one entry by seq (the round index's readers), the last entry (the head check), and a
backup's last entry. Never a bare ``ValueError``/``EntryError`` traceback (controller/journal/rows.py
``entry_from_row``). A real journal written by the real engine (tests/journal/scripted.py), damaged
the way a person with the file would (tests/journal/tamper.py)."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from controller.journal import rows
from controller.journal.errors import JournalError
from controller.journal.store import Journal
from tests.journal.scripted import settled_round_journal
from tests.journal.tamper import tamper

DAMAGE = {
    "private part not JSON": "UPDATE journal SET private = 'not json' WHERE seq = ?",
    "public part not JSON": "UPDATE journal SET payload = '{not json' WHERE seq = ?",
    "public part not an object": "UPDATE journal SET payload = '[5]' WHERE seq = ?",
}


@pytest.fixture(scope="module")
def clean_journal(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return settled_round_journal(tmp_path_factory.mktemp("rows"), seed=5)


def _last(path: Path) -> tuple[int, str]:
    """The journal's last entry's seq and kind: the one row every reader below reaches."""
    with Journal.open_existing(path, readonly=True) as journal:
        last = journal.last_entry()
        assert last is not None
        return last.seq, last.kind


READERS: dict[str, Callable[[Journal, int, str, Path], object]] = {
    "entries": lambda journal, _seq, _kind, _tmp: list(journal.entries()),
    "last_entries": lambda journal, _seq, kind, _tmp: journal.last_entries(1, [kind]),
    "entry": lambda journal, seq, _kind, _tmp: journal.entry(seq),
    "last_entry": lambda journal, _seq, _kind, _tmp: journal.last_entry(),
    "backup": lambda journal, _seq, _kind, tmp: journal.wal.backup(tmp / "copy.sqlite"),
}


@pytest.mark.parametrize("damage", sorted(DAMAGE))
@pytest.mark.parametrize("reader", sorted(READERS))
def test_every_reader_refuses_a_damaged_row_in_the_same_one_line(
    clean_journal: Path, tmp_path: Path, reader: str, damage: str
) -> None:
    path = tmp_path / "journal.sqlite"
    shutil.copyfile(clean_journal, path)
    seq, kind = _last(path)
    tamper(path, (DAMAGE[damage], (seq,)))
    with Journal.open_existing(path, readonly=True) as journal:
        # The paged read's refusal is the reference (it always wrapped a row's error so).
        with pytest.raises(JournalError) as paged:
            list(journal.entries())
        with pytest.raises(JournalError) as refused:
            READERS[reader](journal, seq, kind, tmp_path)
    words = str(refused.value)
    assert words == str(paged.value)
    assert words.startswith(f"journal {path}: entry {seq}: "), words
    assert "\n" not in words


COLUMN_DAMAGE = {
    "version text": (
        "UPDATE journal SET version = 'two' WHERE seq = ?",
        "its version is not an integer but str",
    ),
    "public part a blob": (
        "UPDATE journal SET payload = x'7b7d' WHERE seq = ?",
        "its public part is not text but bytes",
    ),
    "private part a blob": (
        "UPDATE journal SET private = x'7b7d' WHERE seq = ?",
        "its private part is not text but bytes",
    ),
}


@pytest.mark.parametrize("damage", sorted(COLUMN_DAMAGE))
def test_a_column_of_the_wrong_type_is_refused_in_words_naming_it(
    clean_journal: Path, tmp_path: Path, damage: str
) -> None:
    """SQLite keeps any type in any column: a row whose version is text or whose part is a blob is one
    ``JournalError`` naming the column, checked before the decode (not a decode's TypeError)."""
    path = tmp_path / "journal.sqlite"
    shutil.copyfile(clean_journal, path)
    with Journal.open_existing(path, readonly=True) as journal:
        seq = next(entry.seq for entry in journal.entries(kinds=["card_dealt"]))  # one with a private part
    sql, words = COLUMN_DAMAGE[damage]
    tamper(path, (sql, (seq,)))
    with Journal.open_existing(path, readonly=True) as journal, pytest.raises(JournalError) as refused:
        list(journal.entries())
    assert str(refused.value) == f"journal {path}: entry {seq}: {words}"


def test_a_type_error_of_the_decode_itself_is_not_reported_as_damage(
    clean_journal: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A TypeError the decode raises on a sound row is a coding bug: it propagates, not reported as the
    journal's damage. (Simulated: no real coding bug to run; the private part's reader made to raise.)"""

    def broken(_private_text: str) -> dict[str, object]:
        raise TypeError("a coding bug")

    monkeypatch.setattr(rows, "open_private", broken)
    with (
        Journal.open_existing(clean_journal, readonly=True) as journal,
        pytest.raises(TypeError, match="a coding bug"),
    ):
        list(journal.entries())
