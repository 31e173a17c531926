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
