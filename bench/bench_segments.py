"""Start-up in bounded time (issue 25, docs/journal.md "Segments and seals"), printed as JSON:
`flushtable run` from its start to the ``table_opened`` entry committed, on a journal of about 10,000
entries and on a segmented one of about a million, side by side in one run (the same machine, the same
load), each started ``--repeat`` times (the median and every run are printed).

    python bench/bench_segments.py [--small 10000] [--large 1000000] [--segment 100000] [--repeat 3]
                                   [--dir DIR]

How the journals are made, faster than real time: the round engine's own records (autoplay sessions of
every game with faults: bench/bench_journal.py's ``engine_rounds``) appended through the real journal
(``Journal.append_many``, synchronous=OFF while generating only) as retagged copies (each copy's round
ids made unique), one round per commit. The large journal is sealed every ``--segment`` entries the way
`run` seals it (the reducer's state at the segment's end as its checkpoint: ``seal_open_segment``), and
once more so that its open segment holds about as many entries as the small journal (what a day of
dealing leaves in it before the next start seals it). Both get an
anchor at their head, as a stopped daemon leaves it. Then each is started with the default
configuration (simulated devices over pseudo-terminals, no panel), `--rounds 1`, and killed once
``table_opened`` is in the journal (polled read-only every 20 ms). Not a test: the figures move with
the machine's load; report the load average printed beside them.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_journal import engine_rounds, retagged

from controller.journal import Journal
from controller.journal.anchor import Anchor, write_anchor
from controller.journal.recovery import rebuild_state
from controller.journal.seals import seal_numbers
from controller.journal.segments import seal_open_segment
from controller.logs import configure_logging

TABLE_ID = "SIM1"  # the embedded default configuration's table
FLUSHTABLE = str(Path(sys.executable).with_name("flushtable"))
READY_TIMEOUT_S = 900.0


def write_journal(
    path: Path, entries: int, segment_entries: int | None, open_entries: int = 0
) -> dict[str, Any]:
    """A journal of about ``entries`` entries, sealed every ``segment_entries`` (None: never) and once
    more where ``open_entries`` are left for the open segment."""
    started_s = time.perf_counter()
    rounds = engine_rounds(TABLE_ID, 4)
    written = 0
    in_segment = 0
    copy = 0
    journal = Journal.open(path, TABLE_ID, synchronous="OFF")
    try:
        while written < entries:
            for batch in retagged(rounds, f"C{copy}"):
                journal.append_many(batch)
                written += len(batch)
                in_segment += len(batch)
                last_seal_due = (
                    written >= entries - open_entries and written - in_segment < entries - open_entries
                )
                if segment_entries is not None and (in_segment >= segment_entries or last_seal_due):
                    state = rebuild_state(journal)
                    journal.close()
                    seal_open_segment(path, state, key=None)
                    journal = Journal.open(path, TABLE_ID, synchronous="OFF")
                    in_segment = 0
                if written >= entries:
                    break
            copy += 1
        last = journal.last_entry()
        assert last is not None
        write_anchor(path, Anchor.of(TABLE_ID, last.seq, last.hash))
    finally:
        journal.close()
    return {
        "entries": written,
        "sealed_segments": len(seal_numbers(path)),
        "open_segment_entries": in_segment,
        "made_s": round(time.perf_counter() - started_s, 1),
    }


def opened_count(path: Path) -> int:
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5) as db:
            return int(db.execute("SELECT count(*) FROM journal WHERE kind = 'table_opened'").fetchone()[0])
    except sqlite3.Error:
        return 0


def start_to_opened_s(path: Path, seed: int) -> float:
    """`flushtable run` started; seconds until its ``table_opened`` is committed; then killed."""
    before = opened_count(path)
    started_s = time.perf_counter()
    process = subprocess.Popen(
        [
            FLUSHTABLE,
            "run",
            "--journal",
            str(path),
            "--seed",
            str(seed),
            "--time-scale",
            "50",
            "--no-panel",
            "--log-level",
            "warning",
            "--rounds",
            "1",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        while opened_count(path) == before:
            if process.poll() is not None:
                error = process.stderr.read().decode() if process.stderr else ""
                raise RuntimeError(f"flushtable run exited {process.returncode}: {error[-2000:]}")
            if time.perf_counter() - started_s > READY_TIMEOUT_S:
                raise RuntimeError("flushtable run did not open the table")
            time.sleep(0.02)
        elapsed_s = time.perf_counter() - started_s
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)  # a clean stop: the next start recovers nothing
            try:
                process.wait(timeout=120)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        if process.stderr is not None:
            process.stderr.close()
    return elapsed_s


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--small", type=int, default=10_000)
    parser.add_argument("--large", type=int, default=1_000_000)
    parser.add_argument("--segment", type=int, default=100_000, help="entries a sealed segment holds")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--dir", type=Path, default=Path.cwd())
    args = parser.parse_args()
    configure_logging(level="warning", stream=sys.stderr)
    with tempfile.TemporaryDirectory(dir=args.dir, prefix="bench-segments-") as directory:
        root = Path(directory)
        small, large = root / "small" / "journal.sqlite", root / "large" / "journal.sqlite"
        small.parent.mkdir()
        large.parent.mkdir()
        made = {
            "small": write_journal(small, args.small, None),
            "large": write_journal(large, args.large, args.segment, open_entries=args.small),
        }
        runs: dict[str, list[float]] = {"small": [], "large": []}
        for attempt in range(args.repeat):  # alternated: both see the same load
            for name, path in (("small", small), ("large", large)):
                runs[name].append(round(start_to_opened_s(path, attempt), 3))
        figures: dict[str, Any] = {}
        for name in ("small", "large"):
            figures[name] = {
                **made[name],
                "start_to_table_opened_s": {"median": statistics.median(runs[name]), "runs": runs[name]},
                "disk_bytes": sum(f.stat().st_size for f in (root / name).rglob("*") if f.is_file()),
            }
        ratio = figures["large"]["start_to_table_opened_s"]["median"] / max(
            figures["small"]["start_to_table_opened_s"]["median"], 1e-9
        )
        print(
            json.dumps(
                {
                    "bench": "segments: flushtable run start to table_opened",
                    "load_average": os.getloadavg(),
                    "cpus": os.cpu_count(),
                    **figures,
                    "large_over_small": round(ratio, 2),
                },
                indent=2,
            )
        )


if __name__ == "__main__":
    main()
