"""`verify_chain` and `flushtable journal verify` find the first entry an attacker touched."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from controller.cli import main
from controller.journal import Journal, canonical_json, entry_hash
from controller.journal.proof import anchor_journal
from controller.journal.verify import verify_chain
from tests.journal.scripted import play_round
from tests.journal.tamper import tamper


@pytest.fixture
def played(journal: Journal, journal_path: Path) -> int:
    rng = random.Random(7)
    for game in ("high-card-flush", "top-flush", "chase-the-flush"):
        play_round(journal, rng, game=game)
    last = journal.last_entry()
    assert last is not None
    journal.close()
    # Anchored at its head, as the daemon leaves it: verify refuses a journal with entries and no
    # anchor, as `run` does (tests/journal/test_startup_proof.py).
    assert anchor_journal(journal_path, key=None).ok
    return last.seq


def test_an_untouched_journal_verifies(
    journal_path: Path, played: int, capsys: pytest.CaptureFixture[str]
) -> None:
    result = verify_chain(journal_path)
    assert result.ok
    assert result.entries_checked == played
    assert result.append_only_triggers
    assert main(["journal", "verify", "--journal", str(journal_path)]) == 0
    assert capsys.readouterr().out == f"ok {played} entries, anchored at entry {played}\n"


def test_an_edited_payload_is_named(
    journal_path: Path, played: int, capsys: pytest.CaptureFixture[str]
) -> None:
    # Turn a lost ante into a win, keeping the JSON canonical: only the hash can tell.
    tamper(
        journal_path,
        (
            "UPDATE journal SET payload = "
            "replace(payload, '\"amount_cents\":', '\"amount_cents\":9') WHERE seq = 5",
            (),
        ),
    )
    result = verify_chain(journal_path)
    assert (result.ok, result.first_bad_seq, result.entries_checked) == (False, 5, 4)
    assert "hash does not match" in result.reason
    assert not result.append_only_triggers
    assert main(["journal", "verify", "--journal", str(journal_path)]) == 1
    out = capsys.readouterr()
    assert out.out.startswith("bad entry 5: hash does not match")
    assert "triggers are missing" in out.err


def test_a_deleted_row_is_named(journal_path: Path, played: int, capsys: pytest.CaptureFixture[str]) -> None:
    tamper(journal_path, ("DELETE FROM journal WHERE seq = 12", ()))
    result = verify_chain(journal_path)
    assert (result.ok, result.first_bad_seq) == (False, 12)
    assert result.reason == "missing: the next entry is 13 (entries deleted?)"
    assert main(["journal", "verify", "--journal", str(journal_path)]) == 1
    assert capsys.readouterr().out == "bad entry 12: missing: the next entry is 13 (entries deleted?)\n"


@pytest.mark.parametrize(
    ("sql", "bad_seq", "reason"),
    [
        (
            "UPDATE journal SET time_utc = '2026-01-01T00:00:00.000000Z' WHERE seq = 9",
            9,
            "hash does not match",
        ),
        ("UPDATE journal SET source = 'operator:mallory' WHERE seq = 2", 2, "hash does not match"),
        (
            "UPDATE journal SET payload = replace(payload, ':', ': ') WHERE seq = 7",
            7,
            "not in canonical form",
        ),
        ("UPDATE journal SET payload = '[1,2]' WHERE seq = 7", 7, "not a JSON object"),
        ("UPDATE journal SET payload = '{' WHERE seq = 7", 7, "not JSON"),
        ("UPDATE journal SET prev_hash = hash WHERE seq = 3", 3, "prev_hash does not match entry 2"),
        ("UPDATE journal SET table_id = 'T9' WHERE seq = 4", 4, "the journal is table 'T1'"),
        ("UPDATE journal SET seq = seq + 1000 WHERE seq = 1", 1, "missing: the next entry is 2"),
    ],
)
def test_every_kind_of_edit_is_found(
    journal_path: Path, played: int, sql: str, bad_seq: int, reason: str
) -> None:
    tamper(journal_path, (sql, ()))
    result = verify_chain(journal_path)
    assert (result.ok, result.first_bad_seq) == (False, bad_seq)
    assert reason in result.reason


def test_a_rewritten_tail_needs_an_anchor(
    journal_path: Path, played: int, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["journal", "head", "--journal", str(journal_path)]) == 0
    anchor = capsys.readouterr().out.strip()
    assert anchor.startswith(f"{played}:")
    # Cut the last entry off and append a forged one with a correct chain: the chain alone is fooled.
    with Journal.open_existing(journal_path) as journal:
        last = journal.last_entry()
        before = journal.entry(played - 1)
    assert last is not None
    assert before is not None
    forged = {"from": "settling", "machine": "round", "to": "complete", "trigger": "forged"}
    forged_hash = entry_hash(
        prev_hash=before.hash,
        seq=last.seq,
        time_utc=last.time_utc,
        table_id="T1",
        round_id=last.round_id,
        source=last.source,
        kind=last.kind,
        version=last.version,
        payload=forged,
        private_digest=last.private_digest,
    )
    tamper(
        journal_path,
        (
            "UPDATE journal SET payload = ?, hash = ? WHERE seq = ?",
            (canonical_json(forged), forged_hash, last.seq),
        ),
    )
    assert verify_chain(journal_path).ok
    assert main(["journal", "verify", "--journal", str(journal_path), "--anchor", anchor]) == 1
    assert capsys.readouterr().out == f"bad entry {played}: hash differs from the anchor (chain rewritten?)\n"
    # A truncated journal: the anchored entry is gone.
    tamper(journal_path, ("DELETE FROM journal WHERE seq = ?", (last.seq,)))
    assert verify_chain(journal_path).ok
    result = verify_chain(journal_path, anchor=(last.seq, last.hash))
    assert not result.ok
    assert "anchored entry missing" in result.reason


def test_verify_refuses_what_is_not_a_journal(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["journal", "verify", "--journal", str(tmp_path / "nope.sqlite")]) == 2
    assert (
        capsys.readouterr().err == f"flushtable journal: journal {tmp_path / 'nope.sqlite'}: no such file\n"
    )
    garbage = tmp_path / "garbage.sqlite"
    garbage.write_bytes(b"\x00garbage" * 1000)
    assert main(["journal", "verify", "--journal", str(garbage)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "not a database" in err
    assert main(["journal", "verify", "--journal", str(garbage), "--anchor", "x"]) == 2
    assert "--anchor: 'x' is not SEQ:HASH" in capsys.readouterr().err


def test_show_and_tail(journal_path: Path, played: int, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["journal", "tail", "--journal", str(journal_path), "-n", "3", "--json"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [json.loads(line)["seq"] for line in lines] == [played - 2, played - 1, played]
    assert main(["journal", "show", "--journal", str(journal_path), "--kind", "round_settled"]) == 0
    shown = capsys.readouterr().out.splitlines()
    assert len(shown) == 3
    assert all("round_settled" in line for line in shown)
    assert main(["journal", "show", "--journal", str(journal_path), "--kind", "round_setled"]) == 2
    assert "unknown entry kind 'round_setled'" in capsys.readouterr().err


def test_backup_is_a_verified_copy_with_its_anchor(
    journal_path: Path, played: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    copy = tmp_path / "backups" / "journal-1.sqlite"
    assert main(["journal", "backup", "--journal", str(journal_path), str(copy)]) == 0
    out = capsys.readouterr().out
    with Journal.open_existing(journal_path) as journal:
        last = journal.last_entry()
    assert last is not None
    assert out == f"backup {copy}: ok {played} entries, anchor {played}:{last.hash}\n"
    assert verify_chain(copy, anchor=(played, last.hash)).ok
    assert main(["journal", "backup", "--journal", str(journal_path), str(copy)]) == 2
    assert "already exists" in capsys.readouterr().err


def test_verify_reads_a_consistent_snapshot_while_appending(journal_path: Path, played: int) -> None:
    import threading

    stop = threading.Event()

    def appender() -> None:
        with Journal.open(journal_path, "T1") as journal:
            for index in range(2000):
                if stop.is_set():
                    return
                journal.append(
                    "dealer_key", {"key": "next", "seat": index % 7}, round_id=None, source="display"
                )

    thread = threading.Thread(target=appender)
    thread.start()
    try:
        results = [verify_chain(journal_path) for _ in range(5)]
    finally:
        stop.set()
        thread.join(timeout=30)
    assert all(result.ok for result in results), [result.summary() for result in results]
    assert results[-1].entries_checked >= played


def test_a_journal_whose_last_entry_was_edited_is_not_extended(journal_path: Path, played: int) -> None:
    from controller.journal import JournalError

    tamper(journal_path, (f"UPDATE journal SET source = 'operator:mallory' WHERE seq = {played}", ()))
    with pytest.raises(JournalError, match=f"the last entry \\({played}\\) does not verify"):
        Journal.open(journal_path, "T1")
