"""The SIGKILL-and-flipped-byte test's driver (tests/daemon/test_crash_flip.py; also runnable alone:
`python -m tests.daemon.crash_flip --kills 40`, which prints its figures as JSON).

Each trial: `flushtable run` (a real process, a real SQLite WAL journal, time-scale 1000) on a new
journal, SIGKILLed at a random moment once a round has settled, either right after a `round_settled`
is seen committed (the moment of issue 30) or a random time later; then one byte is flipped in the
last transaction of the write-ahead log (SQLite drops the log from that frame on, silently), and the
table is started again (`flushtable run --rounds 1`) and the journal verified (`flushtable journal
verify`) on that copy.

What every trial must show (``check``):
- every round the daemon printed as settled before the kill was covered by the anchor at the kill
  (nothing acts on a settlement before the anchor covering it is durable);
- if the table opened, no round settled at the kill was voided, except one whose settlement was in the
  lost transaction and that nothing had acted on (neither printed nor anchored: a commit nobody was
  told of, the same on disk as a crash just before the commit);
- `journal verify` refuses exactly when `run` refuses, with the same reason.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import random
import re
import shutil
import signal
import sqlite3
import struct
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from controller.journal.anchor import read_anchor
from tests.daemon.harness import FLUSHTABLE

WAIT_S = 30.0  # every wait on a condition is bounded by this
POLL_S = 0.001
WAL_HEADER = 32
FRAME_HEADER = 24
REFUSED_END = 'nothing was appended (see docs/journal.md "When the journal is refused")'
_PRINTED_SETTLED = re.compile(r"^Round (\S+)\s+SETTLED\b", re.MULTILINE)


@dataclass(slots=True)
class Trial:
    seed: int
    moment: str  # "right-after-settled" or "random"
    printed: list[str] = field(default_factory=list)  # rounds printed as settled before the kill
    settled_at_kill: dict[str, int] = field(default_factory=dict)  # round id -> its round_settled seq
    anchor_seq: int = 0
    head_at_kill: int = 0
    head_after_flip: int = 0
    flipped: bool = False
    run_exit: int = -1
    run_line: str = ""
    verify_exit: int = -1
    verify_line: str = ""
    voided_after: list[str] = field(default_factory=list)  # rounds settled at the kill, voided since
    problems: list[str] = field(default_factory=list)


@dataclass(slots=True)
class FlipReport:
    trials: list[Trial] = field(default_factory=list)
    elapsed_s: float = 0.0

    def figures(self) -> dict[str, Any]:
        trials = self.trials
        return {
            "kills": len(trials),
            "right_after_settled": sum(t.moment == "right-after-settled" for t in trials),
            "wal_transaction_flipped": sum(t.flipped for t in trials),
            "settlement_lost_by_the_flip": sum(
                any(seq > t.head_after_flip for seq in t.settled_at_kill.values()) for t in trials
            ),
            "refused": sum(t.run_exit == 2 for t in trials),
            "opened": sum(t.run_exit == 0 for t in trials),
            "voided_never_acted_on": sum(len(t.voided_after) for t in trials),
            "rounds_printed_before_kills": sum(len(t.printed) for t in trials),
            "problems": [problem for t in trials for problem in t.problems],
            "elapsed_s": round(self.elapsed_s, 1),
        }


def _query(path: Path, sql: str, params: tuple[object, ...] = ()) -> list[tuple[Any, ...]]:
    with contextlib.closing(sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=5)) as db:
        return list(db.execute(sql, params))


def _settled_count(path: Path) -> int:
    if not path.exists():
        return 0
    try:
        return int(_query(path, "SELECT COUNT(*) FROM journal WHERE kind = 'round_settled'")[0][0])
    except sqlite3.Error:
        return 0  # the schema is still being created


def _copy(source: Path, directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / source.name
    for suffix in ("", "-wal", "-shm", ".anchor"):
        from_path = source.with_name(source.name + suffix)
        if from_path.exists():
            shutil.copyfile(from_path, target.with_name(target.name + suffix))
    return target


def _last_transaction(wal: bytes) -> tuple[int, list[int]]:
    """The page size and the offsets of the frames of the log's last committed transaction (frames of
    the log's current salt; a commit frame records the database size, non-zero)."""
    if len(wal) < WAL_HEADER:
        return 0, []
    page_size = struct.unpack(">I", wal[8:12])[0]
    salts = wal[16:24]
    frames: list[int] = []
    commits: list[int] = []
    offset = WAL_HEADER
    while offset + FRAME_HEADER + page_size <= len(wal) and wal[offset + 8 : offset + 16] == salts:
        if struct.unpack(">I", wal[offset + 4 : offset + 8])[0]:
            commits.append(len(frames))
        frames.append(offset)
        offset += FRAME_HEADER + page_size
    if not commits:
        return page_size, []
    first = commits[-2] + 1 if len(commits) > 1 else 0
    return page_size, frames[first : commits[-1] + 1]


def _flushtable(*arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([FLUSHTABLE, *arguments], capture_output=True, text=True, timeout=120, check=False)


def _kill_at_a_moment(journal: Path, out_path: Path, trial: Trial, rng: random.Random) -> None:
    command = [
        FLUSHTABLE,
        *("run", "--journal", str(journal), "--seed", str(trial.seed), "--time-scale", "1000"),
        *("--no-panel", "--log-level", "warning"),
    ]
    with out_path.open("wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.DEVNULL)
        try:
            target = rng.randint(1, 4)  # this many rounds settled, then the moment comes
            deadline = time.monotonic() + WAIT_S
            while _settled_count(journal) < target:
                if process.poll() is not None:
                    raise AssertionError(f"the daemon exited {process.returncode} before the kill")
                if time.monotonic() > deadline:
                    raise AssertionError(f"{target} rounds did not settle in {WAIT_S} s")
                time.sleep(POLL_S)
            if trial.moment == "random":
                time.sleep(rng.uniform(0.0, 0.05))
            process.send_signal(signal.SIGKILL)
        finally:
            if process.poll() is None:
                process.kill()
            process.wait(timeout=10)


def one_trial(directory: Path, seed: int, rng: random.Random) -> Trial:
    trial = Trial(seed, "right-after-settled" if rng.random() < 0.5 else "random")
    journal = directory / "live" / "journal.sqlite"
    journal.parent.mkdir(parents=True)
    out_path = directory / "stdout.txt"
    _kill_at_a_moment(journal, out_path, trial, rng)
    trial.printed = _PRINTED_SETTLED.findall(out_path.read_text(encoding="utf-8", errors="replace"))

    # What the kill left (the WAL index as the killed writer left it too), before any flip.
    copy = _copy(journal, directory / "flipped")
    anchor = read_anchor(copy)
    trial.anchor_seq = anchor.seq if anchor is not None else 0
    trial.settled_at_kill = {
        str(round_id): int(seq)
        for round_id, seq in _query(copy, "SELECT round_id, seq FROM journal WHERE kind = 'round_settled'")
    }
    trial.head_at_kill = int(_query(copy, "SELECT COALESCE(MAX(seq), 0) FROM journal")[0][0])
    for round_id in trial.printed:
        seq = trial.settled_at_kill.get(round_id)
        if seq is None or seq > trial.anchor_seq:
            trial.problems.append(
                f"seed {seed}: round {round_id} was printed as settled, but the anchor at the kill "
                f"(entry {trial.anchor_seq}) did not cover its settlement (entry {seq})"
            )

    # One byte flipped in the page of a random frame of the log's last transaction.
    wal_path = copy.with_name(copy.name + "-wal")
    wal = bytearray(wal_path.read_bytes()) if wal_path.exists() else bytearray()
    page_size, frames = _last_transaction(bytes(wal))
    if frames:
        wal[rng.choice(frames) + FRAME_HEADER + rng.randrange(page_size)] ^= 1 << rng.randrange(8)
        wal_path.write_bytes(bytes(wal))
        trial.flipped = True
    trial.head_after_flip = int(_query(copy, "SELECT COALESCE(MAX(seq), 0) FROM journal")[0][0])

    verified = _flushtable("journal", "verify", "--journal", str(copy))
    trial.verify_exit = verified.returncode
    trial.verify_line = verified.stdout.strip()
    ran = _flushtable(
        *("run", "--rounds", "1", "--no-panel", "--time-scale", "1000", "--seed", str(seed)),
        *("--journal", str(copy), "--log-level", "warning"),
    )
    trial.run_exit = ran.returncode
    trial.run_line = ran.stderr.strip()
    check(trial, copy)
    return trial


def check(trial: Trial, copy: Path) -> None:
    seed = trial.seed
    if trial.run_exit == 2:
        expected = f"flushtable run: journal {copy} refused: {trial.verify_line}; {REFUSED_END}"
        if trial.verify_exit != 1 or trial.run_line != expected:
            trial.problems.append(
                f"seed {seed}: run refused ({trial.run_line!r}) but verify said {trial.verify_exit}: "
                f"{trial.verify_line!r}"
            )
        return
    if trial.run_exit != 0:
        trial.problems.append(f"seed {seed}: run exited {trial.run_exit}: {trial.run_line[-500:]}")
        return
    if trial.verify_exit != 0:
        trial.problems.append(f"seed {seed}: verify refused ({trial.verify_line!r}) where run opened")
    closings = {
        str(round_id): str(kind)
        for round_id, kind in _query(
            copy,
            "SELECT round_id, kind FROM journal WHERE kind IN ('round_settled', 'round_voided') "
            f"AND round_id IN ({', '.join('?' for _ in trial.settled_at_kill)})",
            tuple(trial.settled_at_kill),
        )
    }
    for round_id, seq in sorted(trial.settled_at_kill.items()):
        if closings.get(round_id) == "round_settled":
            continue
        acted_on = round_id in trial.printed or seq <= trial.anchor_seq
        if acted_on:
            trial.problems.append(
                f"seed {seed}: round {round_id}, settled at entry {seq} (printed: "
                f"{round_id in trial.printed}, anchored at {trial.anchor_seq}), is "
                f"{closings.get(round_id, 'open')} after the restart, and the table opened"
            )
        else:
            trial.voided_after.append(round_id)


def flip_repeatedly(kills: int, seed: int, work: Path) -> FlipReport:
    rng = random.Random(seed)
    report = FlipReport()
    started_s = time.monotonic()
    for index in range(kills):
        report.trials.append(one_trial(work / f"trial-{index}", seed * 1000 + index, rng))
    report.elapsed_s = time.monotonic() - started_s
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=40)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="crash-flip-") as work:
        report = flip_repeatedly(args.kills, args.seed, Path(work))
    print(json.dumps(report.figures()))


if __name__ == "__main__":
    main()
