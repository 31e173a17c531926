"""`journal show`, `journal tail` and `recall` fold each round from its stored rows through their views
(controller/journal/privacy.py ``RevealOracle``, controller/journal/recall.py ``round_record``); a row the
views cannot read is refused as the replay refuses it (docs/journal.md "Views"): one line naming the
journal and the entry's seq, exit 2, never a traceback, and never a newer release's row read with
today's tables. The real command in a fresh interpreter on a real SQLite journal, damaged the way a
person with the file would (tests/journal/tamper.py: the triggers dropped, an UPDATE)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from controller.journal.errors import JournalError
from controller.journal.store import Journal
from tests.journal.scripted import settled_round_journal
from tests.journal.tamper import tamper

ROOT = Path(__file__).resolve().parents[2]
COMMANDS = (["journal", "show"], ["journal", "tail"], ["recall"])


@pytest.fixture(scope="module")
def clean_journal(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return settled_round_journal(tmp_path_factory.mktemp("damaged"), seed=3)


def _first_card_seq(path: Path) -> int:
    with Journal.open_existing(path, readonly=True) as journal:
        return next(entry.seq for entry in journal.entries(kinds=["card_dealt"]))


def _flushtable(argv: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "controller.cli", *argv],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )


def _damaged(clean: Path, tmp_path: Path, sql: str) -> tuple[Path, int]:
    path = tmp_path / "journal.sqlite"
    shutil.copyfile(clean, path)
    seq = _first_card_seq(path)
    tamper(path, (sql, (seq,)))
    return path, seq


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_a_row_that_does_not_fit_its_kind_is_one_line(
    clean_journal: Path, tmp_path: Path, command: list[str]
) -> None:
    path, seq = _damaged(
        clean_journal,
        tmp_path,
        """UPDATE journal SET private = json_set(private, '$.part.position', '1') WHERE seq = ?""",
    )
    done = _flushtable([*command, "--journal", str(path)])
    assert done.returncode == 2, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert f"journal {path}: entry {seq}: journal: card_dealt" in lines[0]
    assert "Expected `int`, got `str`" in lines[0]


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_a_newer_releases_row_is_refused_in_the_replays_words(
    clean_journal: Path, tmp_path: Path, command: list[str]
) -> None:
    path, seq = _damaged(clean_journal, tmp_path, "UPDATE journal SET version = 3 WHERE seq = ?")
    done = _flushtable([*command, "--journal", str(path)])
    assert done.returncode == 2, done.stderr[-2000:]
    assert done.stderr.strip().splitlines() == [
        f"flushtable {command[0]}: journal {path}: entry {seq}: journal: card_dealt: entry version 3, "
        "written by a newer release than this one (reads up to 2)"
    ]
    # The replay's own refusal of the same row, word for word (what the daemon and `verify` read).
    with Journal.open_existing(path, readonly=True) as journal, pytest.raises(JournalError) as refused:
        list(journal.replay())
    assert str(refused.value) == f"journal {path}: entry {seq}: journal: card_dealt: entry version 3, " + (
        "written by a newer release than this one (reads up to 2)"
    )


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_a_private_part_that_is_not_json_is_one_line(
    clean_journal: Path, tmp_path: Path, command: list[str]
) -> None:
    path, seq = _damaged(clean_journal, tmp_path, "UPDATE journal SET private = 'not json' WHERE seq = ?")
    done = _flushtable([*command, "--journal", str(path)])
    assert done.returncode == 2, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith(f"flushtable {command[0]}: journal {path}: entry {seq}: "), line


V2 = ROOT / "tests" / "journal" / "fixtures" / "journal-v2-57d2c68.sqlite"
NOT_ITS_SHAPE = {
    "settlement a number": ("'{\"settlement\": 5}'", "(AttributeError: 'int' object has no attribute 'get')"),
    "seats a number": ('\'{"settlement": {"seats": 7}}\'', "(TypeError: 'int' object is not iterable)"),
}


@pytest.mark.parametrize("damage", sorted(NOT_ITS_SHAPE))
def test_recall_by_seat_without_a_round_index_refuses_a_damaged_settlement_in_one_line(
    tmp_path: Path, damage: str
) -> None:
    """`recall --seat` in a journal of an earlier schema (no round index: its closings scanned, read
    as the index reads them) whose closing's settlement is not an object: the index's scan's words."""
    path = tmp_path / "journal.sqlite"
    shutil.copyfile(V2, path)  # a real schema-2 journal (tests/journal/fixtures/README.md)
    with Journal.open_existing(path, readonly=True) as journal:
        assert not journal.file.has_totals
        seq = next(entry.seq for entry in journal.entries(kinds=["round_settled"]))
    payload, why = NOT_ITS_SHAPE[damage]
    tamper(path, (f"UPDATE journal SET payload = {payload} WHERE seq = ?", (seq,)))
    done = _flushtable(["recall", "--journal", str(path), "--seat", "1"])
    assert done.returncode == 2, done.stderr[-2000:]
    assert done.stderr.strip().splitlines() == [
        f"flushtable recall: journal {path}: entry {seq}: payload is not a round_settled {why}"
    ]
    # The round index's own scan refuses the same row in the same words.
    with Journal.open_existing(path, readonly=True) as journal, pytest.raises(JournalError) as refused:
        journal.indexes.closed_round_seqs(seat=1)
    assert f"flushtable recall: {refused.value}" == done.stderr.strip()


# A settlement whose seats are not its kind's shape, deeper than the round index reads (a seat's wagers
# not an object, a seat not an object): the fold of the round refuses it, not only the index's scan.
DEEPER_DAMAGE = {
    "seats a number": ('\'{"settlement": {"seats": 7}}\'', "(TypeError: 'int' object is not iterable)"),
    "a seat a number": (
        '\'{"settlement": {"seats": [5]}}\'',
        "(AttributeError: 'int' object has no attribute 'get')",
    ),
    "wagers a number": (
        '\'{"settlement": {"seats": [{"seat": 1, "wagers": 5}]}}\'',
        "(AttributeError: 'int' object has no attribute 'items')",
    ),
}
RECALLS = {"--last": ["--last", "50"], "--seat": ["--seat", "1"]}


@pytest.mark.parametrize("recall", sorted(RECALLS))
@pytest.mark.parametrize("damage", sorted(DEEPER_DAMAGE))
def test_recall_refuses_a_settlement_its_fold_cannot_read_in_one_line(
    tmp_path: Path, damage: str, recall: str
) -> None:
    """`recall --last` and `recall --seat` on a real schema-2 journal whose closing's settlement seats
    are not their shape: the round's fold (``round_record``) refuses the row in one line naming the
    journal and the seq, exit 2, never a traceback."""
    path = tmp_path / "journal.sqlite"
    shutil.copyfile(V2, path)  # a real schema-2 journal (tests/journal/fixtures/README.md)
    with Journal.open_existing(path, readonly=True) as journal:
        seq = next(entry.seq for entry in journal.entries(kinds=["round_settled"]))
    payload, why = DEEPER_DAMAGE[damage]
    tamper(path, (f"UPDATE journal SET payload = {payload} WHERE seq = ?", (seq,)))
    done = _flushtable(["recall", "--journal", str(path), *RECALLS[recall]])
    assert done.returncode == 2, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines() == [
        f"flushtable recall: journal {path}: entry {seq}: payload is not a round_settled {why}"
    ]
