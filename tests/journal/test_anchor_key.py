"""The anchor keyed ([journal] anchor_key_file, docs/journal.md "The anchor key"), and `flushtable
journal verify` deciding as `flushtable run` does (controller/journal/proof.py ``startup_check``, one
code path): for every way of damaging or forging the anchor, both refuse, with the same reason. Real
journals made by the real daemon, the real command line in subprocesses."""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import sqlite3
from pathlib import Path

import pytest

from controller.config import DEFAULT_CONFIG_TOML, ConfigError, load_config
from controller.journal.anchor import Anchor, anchor_mac, anchor_path, key_problem, read_anchor, write_anchor
from tests.journal.test_startup_proof import (
    TABLE_ID,
    copy_journal,
    flushtable,
    last_seq,
    query,
    run_command,
    stored_bytes,
)


def keyed_config(directory: Path, key: bytes | None) -> Path:
    """The embedded table's configuration, with an anchor key file beside it when ``key`` is given."""
    directory.mkdir(parents=True, exist_ok=True)
    text = DEFAULT_CONFIG_TOML
    if key is not None:
        (directory / "anchor.key").write_bytes(key + b"\n")
        text = text.replace(
            '[journal]\npath = "var/journal.sqlite"\n',
            '[journal]\npath = "var/journal.sqlite"\nanchor_key_file = "anchor.key"\n',
        )
        assert "anchor_key_file" in text
    config = directory / "table.toml"
    config.write_text(text)
    return config


KEY = secrets.token_hex(32).encode()


@pytest.fixture(scope="module")
def keyed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Three rounds played by `flushtable run` with an anchor key: (the journal, the configuration)."""
    directory = tmp_path_factory.mktemp("keyed")
    config = keyed_config(directory / "etc", KEY)
    path = directory / "journal.sqlite"
    completed = flushtable(*run_command(path, "--config", str(config), rounds=3, seed=2))
    assert completed.returncode == 0, completed.stderr[-3000:]
    return path, config


def both_refuse(path: Path, config: Path | None, expected: str) -> str:
    """`journal verify` exits 1 printing the reason `run` refuses with (exit 2, one line, nothing
    written): the same line, from the same check."""
    with_config = ["--config", str(config)] if config is not None else []
    verified = flushtable("journal", "verify", "--journal", str(path), *with_config)
    assert verified.returncode == 1, (verified.stdout, verified.stderr)
    [reason] = verified.stdout.splitlines()
    assert expected in reason, reason
    before = stored_bytes(path)
    ran = flushtable(*run_command(path, *with_config))
    assert ran.returncode == 2, ran.stderr[-3000:]
    assert ran.stderr.splitlines() == [
        f"flushtable run: journal {path} refused: {reason}; nothing was appended "
        '(see docs/journal.md "When the journal is refused")'
    ]
    assert stored_bytes(path) == before
    print(f"\n$ flushtable journal verify ...  [exit 1]\n{reason}")
    print(f"$ flushtable run ...  [exit 2]\n{ran.stderr.strip()}")
    return reason


def test_the_daemon_keys_every_anchor_and_verify_accepts_it(keyed: tuple[Path, Path]) -> None:
    path, config = keyed
    anchor = read_anchor(path)
    assert anchor is not None
    assert anchor.mac is not None
    assert anchor.seq == last_seq(path)
    assert key_problem(anchor, KEY, path) is None
    assert set(json.loads(anchor_path(path).read_text())) == {"table_id", "seq", "hash", "time_utc", "mac"}
    completed = flushtable("journal", "verify", "--journal", str(path), "--config", str(config))
    assert (completed.returncode, completed.stdout) == (
        0,
        f"ok {anchor.seq} entries, anchored at entry {anchor.seq}\n",
    )
    assert completed.stderr == ""


def test_anchor_deleted(keyed: tuple[Path, Path], tmp_path: Path) -> None:
    path = copy_journal(keyed[0], tmp_path)
    anchor_path(path).unlink()
    both_refuse(path, keyed[1], f"it has {last_seq(path)} entries but no anchor (journal.sqlite.anchor)")


def test_anchor_deleted_unkeyed_table_too(tmp_path: Path) -> None:
    """The parity defect of issue 30: verify said ok (exit 0) where run refused."""
    path = tmp_path / "plain" / "journal.sqlite"
    path.parent.mkdir()
    assert flushtable(*run_command(path)).returncode == 0
    anchor_path(path).unlink()
    both_refuse(path, None, "entries but no anchor (journal.sqlite.anchor)")


def _cut_tail(path: Path, entries: int) -> tuple[int, str]:
    """An attacker with the disk: the last ``entries`` entries deleted, triggers put back; the new head."""
    with contextlib.closing(sqlite3.connect(path, isolation_level=None)) as db:
        triggers = db.execute("SELECT name, sql FROM sqlite_schema WHERE type = 'trigger'").fetchall()
        for name, _sql in triggers:
            db.execute(f"DROP TRIGGER {name}")
        db.execute("DELETE FROM journal WHERE seq > (SELECT MAX(seq) FROM journal) - ?", (entries,))
        for _name, sql in triggers:
            db.execute(sql)
    [(seq, hash_hex)] = query(path, "SELECT seq, hash FROM journal ORDER BY seq DESC LIMIT 1")
    return int(seq), str(hash_hex)


def test_settled_rounds_cut_off_and_the_anchor_recomputed_without_the_key(
    keyed: tuple[Path, Path], tmp_path: Path
) -> None:
    """The forgery the key is for: the last round's settlement cut off the end, and an anchor written at
    the new head by whoever can write the disk (unkeyed, or keyed with a key of their own)."""
    path = copy_journal(keyed[0], tmp_path / "unkeyed")
    [(settled_seq,)] = query(path, "SELECT MAX(seq) FROM journal WHERE kind = 'round_settled'")
    seq, hash_hex = _cut_tail(path, last_seq(path) - settled_seq + 1)
    assert seq == settled_seq - 1
    write_anchor(path, Anchor.of(TABLE_ID, seq, hash_hex))
    both_refuse(
        path, keyed[1], "the anchor (journal.sqlite.anchor) is not keyed, but an anchor key is configured"
    )

    other = copy_journal(path, tmp_path / "other-key")
    write_anchor(other, Anchor.of(TABLE_ID, seq, hash_hex), key=secrets.token_hex(32).encode())
    both_refuse(other, keyed[1], "the anchor (journal.sqlite.anchor) does not verify with the anchor key")

    # The key's own mac moved onto another anchor's fields (an old anchor's mac replayed on a new head).
    genuine = read_anchor(keyed[0])
    assert genuine is not None
    assert genuine.mac is not None
    swapped = copy_journal(path, tmp_path / "swapped")
    fields = {**Anchor.of(TABLE_ID, seq, hash_hex).to_json(), "mac": genuine.mac}
    anchor_path(swapped).write_text(json.dumps(fields))
    both_refuse(swapped, keyed[1], "does not verify with the anchor key")


def test_without_a_key_such_a_forgery_is_accepted(tmp_path: Path) -> None:
    """What the key is for, shown: on a table with no anchor key, the same forgery opens (documented:
    docs/journal.md "The anchor key")."""
    path = tmp_path / "plain" / "journal.sqlite"
    path.parent.mkdir()
    assert flushtable(*run_command(path, rounds=2)).returncode == 0
    [(settled_seq,)] = query(path, "SELECT MAX(seq) FROM journal WHERE kind = 'round_settled'")
    seq, hash_hex = _cut_tail(path, last_seq(path) - settled_seq + 1)
    write_anchor(path, Anchor.of(TABLE_ID, seq, hash_hex))
    verified = flushtable("journal", "verify", "--journal", str(path))
    assert verified.returncode == 0
    assert "note: the anchor is not keyed" in verified.stderr


def test_a_keyed_anchor_with_the_key_dropped_from_the_configuration(
    keyed: tuple[Path, Path], tmp_path: Path
) -> None:
    path = copy_journal(keyed[0], tmp_path)
    no_key = keyed_config(tmp_path / "etc", None)
    both_refuse(path, no_key, "the anchor (journal.sqlite.anchor) is keyed, but no anchor key is configured")
    both_refuse(path, None, "is keyed, but no anchor key is configured")  # the embedded configuration


def test_anchor_damaged_or_another_tables(keyed: tuple[Path, Path], tmp_path: Path) -> None:
    path = copy_journal(keyed[0], tmp_path / "damaged")
    anchor_path(path).write_text("{not json")
    both_refuse(path, keyed[1], "anchor ")  # the anchor file named, "not JSON (damaged?)"
    other = copy_journal(keyed[0], tmp_path / "other-table")
    anchor = read_anchor(other)
    assert anchor is not None
    write_anchor(other, Anchor.of("T9", anchor.seq, anchor.hash), key=KEY)
    both_refuse(other, keyed[1], "its anchor (journal.sqlite.anchor) is table 'T9', not 'SIM1'")


def test_the_key_file_is_checked_up_front(tmp_path: Path) -> None:
    def refusal(key_file: str) -> str:
        config = tmp_path / "table.toml"
        config.write_text(
            DEFAULT_CONFIG_TOML.replace(
                "[journal]\n", f"[journal]\nanchor_key_file = {json.dumps(key_file)}\n"
            )
        )
        with pytest.raises(ConfigError) as refused:
            load_config(config)
        message = str(refused.value)
        assert "\n" not in message, message
        assert "journal.anchor_key_file" in message, message
        assert KEY.decode() not in message
        return message

    assert "no such file" in refusal(str(tmp_path / "absent.key"))
    (tmp_path / "short.key").write_bytes(b"0123456789abcdef\n")
    assert "16 bytes; an anchor key has at least 32" in refusal(str(tmp_path / "short.key"))
    (tmp_path / "same.key").write_bytes(b"a" * 64)
    assert "every byte the same" in refusal(str(tmp_path / "same.key"))
    (tmp_path / "big.key").write_bytes(b"x" * 10_000)
    assert "larger than 4,096 bytes" in refusal(str(tmp_path / "big.key"))
    assert "not a regular file" in refusal("/dev/zero")  # never read: it would never end
    os.mkfifo(tmp_path / "fifo.key")
    assert "not a regular file" in refusal(str(tmp_path / "fifo.key"))  # never opened for a writer
    assert "not a regular file" in refusal(str(tmp_path))


def test_the_mac_covers_every_field() -> None:
    anchor = Anchor.of(TABLE_ID, 12, "a" * 64)
    macs = {
        anchor_mac(KEY, changed)
        for changed in (
            anchor,
            Anchor(TABLE_ID, 13, anchor.hash, anchor.time_utc),
            Anchor(TABLE_ID, 12, "b" * 64, anchor.time_utc),
            Anchor("T9", 12, anchor.hash, anchor.time_utc),
            Anchor(TABLE_ID, 12, anchor.hash, "2020-01-01T00:00:00.000000Z"),
        )
    }
    assert len(macs) == 5
    assert anchor_mac(KEY + b"x", anchor) not in macs


def test_a_table_that_ran_without_a_key_gets_one(tmp_path: Path) -> None:
    """docs/operations.md "The anchor key": verify without the key, move the unkeyed anchor aside,
    `journal anchor --config` with the key, and the table runs keyed. `journal anchor` does not replace
    an unkeyed anchor in place (that is what a forgery looks like)."""
    path = tmp_path / "var" / "journal.sqlite"
    path.parent.mkdir()
    assert flushtable(*run_command(path)).returncode == 0
    config = keyed_config(tmp_path / "etc", KEY)
    in_place = flushtable("journal", "anchor", "--journal", str(path), "--config", str(config))
    assert in_place.returncode == 1
    assert "is not keyed, but an anchor key is configured" in in_place.stdout
    assert flushtable("journal", "verify", "--journal", str(path)).returncode == 0
    anchor_path(path).rename(tmp_path / "unkeyed.anchor")
    anchored = flushtable("journal", "anchor", "--journal", str(path), "--config", str(config))
    assert anchored.returncode == 0, anchored.stdout + anchored.stderr
    anchor = read_anchor(path)
    assert anchor is not None
    assert key_problem(anchor, KEY, path) is None
    ran = flushtable(*run_command(path, "--config", str(config)))
    assert ran.returncode == 0, ran.stderr[-3000:]
    after = read_anchor(path)
    assert after is not None
    assert after.seq == last_seq(path) > anchor.seq
    assert key_problem(after, KEY, path) is None
