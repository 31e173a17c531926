"""Crash safety of sealing (docs/journal.md "Segments and seals"): a process that appends rounds and
seals a segment after every round is killed with SIGKILL at random moments, many of them during a seal;
and a seal is stopped after each of its steps in turn. After every kill, the next start finishes what
the seal left (controller/journal/segments.py finish_interrupted_seal, run by prepare_for_run) and then:
every entry reported committed is there with its hash, exactly once, the entries run 1..N with no gap
and no duplicate across the segments, every sealed segment verifies on its own, the start's state (the
last seal's checkpoint and the open segment) is the whole journal's fold, and no round is closed twice.
SIGKILL leaves the OS's buffers alone: this is the process dying mid-seal, not power loss."""

from __future__ import annotations

import contextlib
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from controller.journal import Journal, segments
from controller.journal.anchor import Anchor, write_anchor
from controller.journal.chain import canonical_json
from controller.journal.checkpoint import state_to_checkpoint
from controller.journal.meters import compute_meters
from controller.journal.proof import prepare_for_run, startup_check
from controller.journal.recovery import rebuild_state, recover
from controller.journal.seals import seal_numbers
from controller.journal.segments import finish_interrupted_seal, seal_open_segment, verify_segments
from controller.journal.state import TableState
from tests.journal.scripted import play_round

KEY = b"segments-crash-test-key-0123456789abcdef"
KILLS = int(os.environ.get("FLUSHTABLE_SEGMENT_KILLS", "8"))
REPO = Path(__file__).resolve().parents[2]
READY_TIMEOUT_S = 60.0


def run_and_kill(path: Path, seed: int, after_s: float) -> tuple[list[tuple[int, str]], int]:
    """The child started, killed ``after_s`` after it is ready; the entries it reported, its seals."""
    child = subprocess.Popen(
        [sys.executable, "-m", "tests.journal.segment_appender", str(path), str(seed), KEY.hex()],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    try:
        line = child.stdout.readline()
        assert line == "ready\n", line + (child.stderr.read() if child.stderr else "")
        time.sleep(after_s)
        os.kill(child.pid, signal.SIGKILL)
        out = child.stdout.read()
    finally:
        child.kill()
        child.wait(timeout=30)
        child.stdout.close()
        if child.stderr is not None:
            child.stderr.close()
    assert child.returncode == -signal.SIGKILL, f"the child ended by itself: {child.returncode}"
    complete = out[: out.rfind("\n") + 1]
    reported = [line.split() for line in complete.splitlines()]
    entries = [(int(seq), hash_hex) for seq, hash_hex in (r for r in reported if r[0] != "sealed")]
    seals = sum(1 for r in reported if r[0] == "sealed")
    return entries, seals


def check_whole(path: Path, reported: dict[int, str]) -> int:
    """What every start must find: the journal whole, once. Returns how many entries it holds."""
    prepare_for_run(path, "T1", key=KEY)  # the next start: finishes an interrupted seal, proves
    assert startup_check(path, "T1", key=KEY).refusal is None
    verdicts = verify_segments(path, key=KEY)
    assert all(verdict.ok for verdict in verdicts), [v.line for v in verdicts if not v.ok]
    with Journal.open_existing(path) as journal:
        seqs_hashes = [(entry.seq, entry.hash) for entry in journal.entries()]
        assert [seq for seq, _ in seqs_hashes] == list(range(1, len(seqs_hashes) + 1))  # no gap, no double
        held = dict(seqs_hashes)
        lost = [seq for seq, hash_hex in reported.items() if held.get(seq) != hash_hex]
        assert not lost, f"entries reported committed and lost or changed: {lost[:5]}"
        closings = Counter(
            entry.round_id for entry in journal.entries(kinds=["round_settled", "round_dead", "round_voided"])
        )
        assert all(count == 1 for count in closings.values()), "a round closed twice"
        whole = TableState("T1").apply_all(journal.replay())
        assert canonical_json(state_to_checkpoint(rebuild_state(journal))) == canonical_json(
            state_to_checkpoint(whole)
        )
    return len(seqs_hashes)


def test_sigkill_at_random_moments_also_during_seals_loses_nothing_and_doubles_nothing(
    tmp_path: Path,
) -> None:
    path = tmp_path / "var" / "journal.sqlite"
    path.parent.mkdir()
    rng = random.Random(25)
    reported: dict[int, str] = {}
    seals_reported = 0
    for kill in range(KILLS):
        entries, seals = run_and_kill(path, seed=kill, after_s=rng.uniform(0.1, 1.2))
        reported.update(entries)
        seals_reported += seals
        check_whole(path, reported)
    segments_sealed = len(seal_numbers(path))
    print(
        f"{KILLS} kills, {len(reported)} entries reported, {seals_reported} seals reported, "
        f"{segments_sealed} segments sealed"
    )
    assert seals_reported >= 2  # the kills landed among seals, not only among appends
    assert segments_sealed >= seals_reported
    with Journal.open(path, "T1") as journal:
        recover(journal)
        meters = compute_meters(journal)
        assert rebuild_state(journal).open_rounds == []
    assert meters.balanced
    assert meters.rounds_started == meters.rounds_settled + meters.rounds_dead + meters.rounds_voided


class _Stopped(BaseException):
    """The process stops here (as if killed): nothing after this point runs."""


def _stop(*_args: object, **_kwargs: object) -> None:
    raise _Stopped


# Each step of a seal, and where the test stops it just before (the module's docstring lists them).
STEPS = {
    "before the anchor": (None, ""),  # the anchor writer given to the seal stops
    "before the seal is written": (segments, "_write_atomically"),
    "before the file is moved": (os, "chmod"),  # made read-only, then moved
    "before the next segment": (Journal, "open"),
}


@pytest.mark.parametrize("step", sorted(STEPS))
def test_a_seal_stopped_after_any_step_is_finished_at_the_next_start(
    tmp_path: Path, step: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "journal.sqlite"
    prepare_for_run(path, "T1", key=KEY)
    rng = random.Random(7)
    with Journal.open(path, "T1") as journal:
        for _ in range(3):
            play_round(journal, rng)
        last = journal.last_entry()
        assert last is not None
        write_anchor(path, Anchor.of("T1", last.seq, last.hash), key=KEY)
        state = rebuild_state(journal)
        before = [(entry.seq, entry.hash) for entry in journal.entries()]

    def anchor_at(seq: int, hash_hex: str) -> None:
        write_anchor(path, Anchor.of("T1", seq, hash_hex), key=KEY)

    where, name = STEPS[step]
    with monkeypatch.context() as patch:
        stop_anchor: Callable[[int, str], None]
        if where is None:
            stop_anchor = _stop
        else:
            stop_anchor = anchor_at
            patch.setattr(where, name, _stop)
        with pytest.raises(_Stopped):
            seal_open_segment(path, state, key=KEY, write_anchor_at_end=stop_anchor)
    check_whole(path, dict(before))
    assert finish_interrupted_seal(path) is None  # finished once, nothing left to do
    with Journal.open(path, "T1") as journal:  # and the table goes on
        play_round(journal, rng)
        last = journal.last_entry()
        assert last is not None
        write_anchor(path, Anchor.of("T1", last.seq, last.hash), key=KEY)
        sealed = step not in {"before the seal is written", "before the anchor"}
        assert journal.file.base.segment == (2 if sealed else 1)
    check_whole(path, dict(before))


def test_a_next_segment_whose_creation_was_cut_short_is_created_again(tmp_path: Path) -> None:
    """Killed while creating the next segment: a database file with nothing committed in it (SQLite
    wrote its header when switching to WAL); the next start creates the segment again."""
    path = tmp_path / "journal.sqlite"
    prepare_for_run(path, "T1", key=KEY)
    rng = random.Random(8)
    with Journal.open(path, "T1") as journal:
        play_round(journal, rng)
        state = rebuild_state(journal)
        before = [(entry.seq, entry.hash) for entry in journal.entries()]
    seal = seal_open_segment(
        path,
        state,
        key=KEY,
        write_anchor_at_end=lambda seq, hash_hex: write_anchor(path, Anchor.of("T1", seq, hash_hex), key=KEY),
    )
    assert seal is not None
    path.unlink()
    with contextlib.closing(sqlite3.connect(path, isolation_level=None)) as db:
        db.execute("PRAGMA journal_mode = WAL").fetchall()
    assert path.stat().st_size > 0
    assert startup_check(path, "T1", key=KEY).then == "finish_seal"
    check_whole(path, dict(before))
    with Journal.open_existing(path) as journal:
        assert journal.file.base == seal.next_base()


_KILLED_MID_WRITE = """
import os, signal, sqlite3, sys
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("PRAGMA cache_size = 1")  # the change spills to the file: its -journal is hot
db.execute("BEGIN IMMEDIATE")
rows = [(f"k{i}", "x" * 4000) for i in range(500)]
db.executemany("INSERT INTO journal_meta (key, value) VALUES (?, ?)", rows)
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_seal_killed_in_its_rollback_journal_switch_is_rolled_back_at_the_next_start(
    tmp_path: Path,
) -> None:
    """Killed while the open segment is in rollback-journal mode mid-write (a seal's step 1): a hot
    ``-journal`` is left, which read-only readers cannot roll back; the next start rolls it back."""
    path = tmp_path / "journal.sqlite"
    prepare_for_run(path, "T1", key=KEY)
    with Journal.open(path, "T1") as journal:
        play_round(journal, random.Random(9))
        last = journal.last_entry()
        assert last is not None
        write_anchor(path, Anchor.of("T1", last.seq, last.hash), key=KEY)
        before = [(entry.seq, entry.hash) for entry in journal.entries()]
    segments._make_self_contained(path)  # step 1 done: the file is in rollback-journal mode
    subprocess.run([sys.executable, "-c", _KILLED_MID_WRITE, str(path)], check=False)
    assert path.with_name(path.name + "-journal").stat().st_size > 0
    check_whole(path, dict(before))
    assert not path.with_name(path.name + "-journal").exists()
