"""A table that has run for months: recall, meters, the panel's pages and `flushtable run`'s start on a
big journal beside the same on a 10,000-entry one, measured side by side in one run. Prints JSON.

    .venv/bin/python bench/bench_years.py [--big 5000000] [--small 10000] [--dir DIR] [--reuse]

How the big journal is made (``--writer bulk``, the default): bench/years_bulk.py writes its first
segment through the real path below and every later one by splicing that segment's rows (each round
numbered as `run` numbers it), folding the real reducer and sealing with the real seal; docs/journal.md
"Measured" says exactly how, and `flushtable journal verify --segments` accepts the result whole. With
``--writer real`` (and always for the small journal): whole rounds as the round engine records them
(bench/bench_journal.py ``engine_rounds``: faulted autoplay sessions of every game, house-banked and
designated-player) are appended again and again as retagged copies (each copy's round ids made unique,
as a journal starts each round once), ``--rounds-per-commit`` rounds per ``Journal.append_many`` (one
transaction: the entries, the chain, the triggers, the totals and the round index, as the daemon
appends), with ``synchronous=OFF`` (no fsync: the writing is not what is measured) and the journal's
clock stepping 60 s a round (60 rounds an hour, around the clock), so the hours and days of the totals
are a live table's. The table id is the simulated table's (SIM1), so `flushtable run` with no
configuration opens it. The open segment is sealed every ``--segment-entries`` (the default
``[journal] segment_entries``); the bulk writer leaves an open segment of ``--open-entries`` (half of
that by default: a start comes at a random moment between two seals), and ``--extend-open-to`` grows it
before measuring (the worst case: an open segment at the policy's limit).

Figures (median of --repeat runs, each a fresh process for the commands):
- ``recall_round_s``: `flushtable recall --round ID` of a round in the middle of the journal.
- ``recall_seat_shift_s``: `flushtable recall --from --to --seat 1 --last 20` over that shift (the
  last 20 of seat 1's rounds in it: the same work on both journals).
- ``meters_shift_s``: `flushtable meters --date D --shift S`, the shift of the middle round.
- ``meters_s``: `flushtable meters` (the whole journal).
- ``panel_recall_page_s``, ``panel_recall_round_page_s``, ``panel_meters_shift_page_s``: GET /recall,
  /recall/{id} and /meters?date=D&shift=S through the panel app (routes, templates, backend over the
  journal; in-process over httpx's ASGI transport, logged in as a viewer); ``panel_start_s``: building
  the panel's backend over the journal (its view's fold).
- ``run_to_table_opened_s``: `flushtable run --journal J --rounds 1 --no-panel` from its start to the
  ``table_opened`` line in its log (then stopped): the start-up proof, recovery and the view's fold;
  ``second_run_to_table_opened_s``: the same again (with sealed segments, the first start on a journal
  due to be sealed seals it; the second proves the open segment and the last seal only).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_journal import engine_rounds, retagged
from years_bulk import build_bulk, extend_open

from controller.config import SegmentPolicy
from controller.journal import Journal
from controller.journal.anchor import Anchor, write_anchor
from controller.journal.proof import anchor_journal
from controller.journal.seals import segments_dir
from controller.journal.segments import seal_open_segment
from controller.journal.state import TableState
from controller.panel.shift_meters import shift_range

TABLE_ID = "SIM1"
START = datetime(2026, 1, 1, 6, 0, tzinfo=UTC)
ROUND_STEP = timedelta(seconds=60)
SEGMENT_ENTRIES = SegmentPolicy().entries  # the default [journal] segment_entries
REPO = Path(__file__).resolve().parents[1]


class StepClock:
    def __init__(self, start: datetime) -> None:
        self.now = start

    def __call__(self) -> datetime:
        return self.now


def build(
    path: Path,
    entries: int,
    base: list[list[Any]],
    *,
    segment_entries: int = SEGMENT_ENTRIES,
    rounds_per_commit: int = 1,
) -> dict[str, Any]:
    """Append retagged copies of the engine's rounds until the journal holds ``entries``, sealing the
    open segment between rounds each time it holds ``segment_entries`` (the default [journal]
    segment_entries), as a running table does (controller/daemon_sealing.py ``seal_live_if_due``): the
    reducer's state folded on from each append's written entries, the segment sealed with it and its
    anchor written at its end, and the next segment opened at the same path. 0: never sealed (one file).
    ``rounds_per_commit`` rounds are appended in one transaction (one ``append_many``, as the daemon's
    group commit writes whatever waits in one), all at that commit's time; the clock steps 60 s a round,
    so the table still deals 60 rounds an hour."""
    clock = StepClock(START)
    written = 0
    rounds = 0
    seals = 0
    seal_s = 0.0
    started = time.perf_counter()
    state = TableState(TABLE_ID)
    journal = Journal.open(path, TABLE_ID, clock=clock, synchronous="OFF")
    try:
        journal.wal.defer_checkpoints()
        here = 0  # entries in the open segment
        copy = 0
        while written < entries:
            copies = retagged(base, f"C{copy}")
            for first in range(0, len(copies), rounds_per_commit):
                commit = copies[first : first + rounds_per_commit]
                batch = [record for one_round in commit for record in one_round]
                state.apply_all(journal.append_many(batch))
                written += len(batch)
                here += len(batch)
                rounds += len(commit)
                clock.now += ROUND_STEP * len(commit)
                if rounds % 20_000 < len(commit):
                    journal.wal.checkpoint()
                    rate = written / (time.perf_counter() - started)
                    print(f"  {path.name}: {written:,} entries, {rate:,.0f}/s", file=sys.stderr, flush=True)
                if segment_entries and here >= segment_entries and written < entries:
                    sealing = time.perf_counter()
                    journal.close()
                    seal_open_segment(
                        path,
                        state,
                        key=None,
                        now=clock.now,
                        write_anchor_at_end=lambda seq, hash_hex: write_anchor(
                            path, Anchor.of(TABLE_ID, seq, hash_hex, now=clock.now)
                        ),
                    )
                    journal = Journal.open(path, TABLE_ID, clock=clock, synchronous="OFF")
                    journal.wal.defer_checkpoints()
                    seals += 1
                    here = 0
                    seal_s += time.perf_counter() - sealing
                if written >= entries:
                    break
            copy += 1
        journal.wal.checkpoint()
    finally:
        journal.close()
    build_s = time.perf_counter() - started
    anchor_started = time.perf_counter()
    if seals:
        # Its anchor at the head, as the daemon writes it after each round's close; the sealed past is
        # proven by its seals (`flushtable journal verify` proves them all; not timed here).
        with Journal.open_existing(path) as head_journal:
            last = head_journal.last_entry()
        assert last is not None
        write_anchor(path, Anchor.of(TABLE_ID, last.seq, last.hash, now=clock.now))
    else:
        verdict = anchor_journal(path, key=None)
        if not verdict.ok:
            raise SystemExit(f"{path}: {verdict.line}")
    return {
        "entries": written,
        "rounds": rounds,
        "segments_sealed": seals,
        "segment_entries": segment_entries,
        "rounds_per_commit": rounds_per_commit,
        "span_days": round((clock.now - START).total_seconds() / 86400, 1),
        "build_s": round(build_s, 1),
        "build_entries_per_s": round(written / build_s),
        "seal_s": round(seal_s, 1),
        "anchor_s": round(time.perf_counter() - anchor_started, 1),
        "file_bytes": sum(
            file.stat().st_size for file in [path, *segments_dir(path).glob("*.sqlite")] if file.exists()
        ),
    }


def _bytes(path: Path) -> int:
    """The journal's bytes on disk: its open segment and every sealed one beside it."""
    return sum(file.stat().st_size for file in [path, *segments_dir(path).glob("*.sqlite")] if file.exists())


def _middle(path: Path) -> tuple[str, str, str]:
    """A round closed in the middle of the journal, and the day and shift it closed in."""
    with Journal.open_existing(path) as journal:
        seqs = journal.indexes.closed_round_seqs()
        closing = journal.entry(seqs[len(seqs) // 2])
        assert closing is not None
        assert closing.round_id is not None
        moment = datetime.fromisoformat(closing.time_utc.removesuffix("Z"))
        if 6 <= moment.hour < 14:
            return closing.round_id, moment.date().isoformat(), "day"
        if 14 <= moment.hour < 22:
            return closing.round_id, moment.date().isoformat(), "swing"
        # The grave shift of a date starts that evening at 22:00.
        evening = moment.date() if moment.hour >= 22 else moment.date() - timedelta(days=1)
        return closing.round_id, evening.isoformat(), "grave"


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO)
    return env


def _command_s(argv: list[str]) -> float:
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "controller.cli", *argv],
        capture_output=True,
        text=True,
        env=_env(),
        cwd=REPO,
        timeout=3600,
        check=False,
    )
    elapsed = time.perf_counter() - started
    if done.returncode not in (0, 1):  # meters exits 1 when unbalanced: still an answer
        raise SystemExit(f"{argv}: exit {done.returncode}: {done.stderr.strip()[-400:]}")
    return elapsed


def _run_to_table_opened_s(path: Path, workdir: Path) -> float:
    """`flushtable run` on the journal, from its start to its table_opened log line; then stopped."""
    argv = [
        sys.executable,
        "-m",
        "controller.cli",
        "run",
        "--journal",
        str(path),
        "--rounds",
        "1",
        "--no-panel",
        "--time-scale",
        "50",
        "--log-level",
        "info",
    ]
    started = time.perf_counter()
    process = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=_env(), cwd=workdir
    )
    assert process.stdout is not None
    elapsed: float | None = None
    tail: list[str] = []
    for line in process.stdout:
        tail = [*tail[-20:], line]
        if "table_opened" in line:
            elapsed = time.perf_counter() - started
            break
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=600)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
    if elapsed is None:
        raise SystemExit(f"run on {path} never opened the table: {''.join(tail)[-800:]}")
    return elapsed


async def _panel_figures(
    path: Path, workdir: Path, middle: tuple[str, str, str], repeat: int
) -> dict[str, float]:
    round_id, day, shift = middle
    import httpx  # noqa: PLC0415

    from controller.panel import JournalPanelBackend, UserStore, create_panel_app  # noqa: PLC0415

    journal = Journal.open_existing(path)
    users = UserStore(workdir / f"users-{path.stem}.json")
    if users.get("bench") is None:
        users.add("bench", "viewer", "bench-password-1")
    started = time.perf_counter()
    backend = JournalPanelBackend(journal, read_only=True)  # as `flushtable panel` over a journal
    panel_start_s = time.perf_counter() - started
    app = create_panel_app(backend, users=users)
    transport = httpx.ASGITransport(app=app)
    out: dict[str, list[float]] = {"recall_page": [], "recall_round_page": [], "meters_shift_page": []}
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
        await http.get("/login")
        await http.post(
            "/login",
            data={
                "user": "bench",
                "password": "bench-password-1",
                "csrf_token": http.cookies.get("ft_login_csrf") or "",
            },
        )
        pages = {
            "recall_page": "/recall",
            "recall_round_page": f"/recall/{round_id}",
            "meters_shift_page": f"/meters?date={day}&shift={shift}",
        }
        for url in pages.values():  # warm: the first render loads templates and the par-sheet code
            await http.get(url)
        for _ in range(repeat):
            for name, url in pages.items():
                begun = time.perf_counter()
                response = await http.get(url)
                out[name].append(time.perf_counter() - begun)
                if response.status_code != 200:
                    raise SystemExit(f"panel {url}: {response.status_code} {response.text[:300]}")
    journal.close()
    return {"panel_start_s": panel_start_s, **{f"panel_{k}_s": statistics.median(v) for k, v in out.items()}}


def measure(path: Path, workdir: Path, repeat: int) -> Iterator[tuple[str, Callable[[], float]]]:
    """The figures of one journal, each as a thunk (so two journals' can be interleaved)."""
    round_id, day, shift = _middle(path)
    j = str(path)
    shift_from, shift_to = (text[:16] for text in shift_range(day, shift))
    commands = {
        "recall_round_s": ["recall", "--journal", j, "--round", round_id],
        "recall_seat_shift_s": [
            *("recall", "--journal", j, "--from", shift_from, "--to", shift_to, "--seat", "1", "--last", "20")
        ],
        "meters_shift_s": ["meters", "--journal", j, "--date", day, "--shift", shift],
        "meters_s": ["meters", "--journal", j],
    }
    for name, argv in commands.items():
        yield name, lambda argv=argv: statistics.median(_command_s(argv) for _ in range(repeat))  # type: ignore[misc]


def in_process(path: Path, repeat: int) -> dict[str, float]:
    """The same reads in this process, the journal already open (no interpreter start-up, which on a
    loaded machine is most of a command's time and varies by a second): the median of ``repeat``."""
    from controller.journal.meters import compute_meters, range_totals  # noqa: PLC0415
    from controller.journal.recall import recall_from  # noqa: PLC0415

    round_id, day, shift = _middle(path)
    start_utc, end_utc = shift_range(day, shift)
    reads: dict[str, Callable[[Journal], object]] = {
        "recall_round": lambda j: recall_from(j, round_id=round_id),
        "recall_seat_shift_last20": lambda j: recall_from(
            j, start_utc=start_utc, end_utc=end_utc, seat=1, last=20
        ),
        "meters_shift": lambda j: range_totals(j, start_utc, end_utc),
        "meters": compute_meters,
    }
    out: dict[str, float] = {}
    with Journal.open_existing(path) as journal:
        for name, read in reads.items():
            read(journal)  # warm
            samples = []
            for _ in range(max(repeat, 5)):
                begun = time.perf_counter()
                read(journal)
                samples.append(time.perf_counter() - begun)
            out[f"in_process_{name}_s"] = round(statistics.median(samples), 5)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--big", type=int, default=5_000_000, help="entries of the big journal")
    parser.add_argument("--small", type=int, default=10_000, help="entries of the small journal")
    parser.add_argument("--dir", type=Path, default=None, help="where the journals go (kept with --reuse)")
    parser.add_argument("--reuse", action="store_true", help="reuse journals already built in --dir")
    parser.add_argument("--repeat", type=int, default=3, help="runs per figure (median)")
    parser.add_argument(
        "--only-reads", action="store_true", help="the commands' and in-process reads only (no panel, no run)"
    )
    parser.add_argument(
        "--segment-entries",
        type=int,
        default=SEGMENT_ENTRIES,
        help="seal the open segment while building each time it holds this many entries (0: never)",
    )
    parser.add_argument(
        "--rounds-per-commit", type=int, default=1, help="rounds appended in one transaction while building"
    )
    parser.add_argument("--build-only", action="store_true", help="build the journals, measure nothing")
    parser.add_argument("--rounds-per-game", type=int, default=25, help="engine rounds per game to copy")
    parser.add_argument(
        "--writer",
        choices=("bulk", "real"),
        default="bulk",
        help="the big journal's writer: bulk (bench/years_bulk.py: the first segment through the real "
        "path, the rest spliced from it) or real (every round through Journal.append_many)",
    )
    parser.add_argument(
        "--open-entries",
        type=int,
        default=None,
        help="the big journal's open segment, in entries (bulk writer; default: half of "
        "--segment-entries, a table's open segment on average between two seals)",
    )
    parser.add_argument(
        "--start",
        type=lambda text: datetime.fromisoformat(text).replace(tzinfo=UTC),
        default=START,
        help="the big journal's first round (bulk writer; default 2026-01-01T06:00): 50 million entries "
        "are 14 months of rounds, which must end before now (a start appends at the wall clock's time)",
    )
    parser.add_argument(
        "--extend-open-to",
        type=int,
        default=0,
        help="with --reuse: first bulk-append to the big journal's open segment until it holds this many "
        "entries (the worst case: an open segment at the seal policy's limit)",
    )
    args = parser.parse_args()
    from controller.logs import configure_logging  # noqa: PLC0415

    configure_logging(level="error")
    workdir = args.dir or Path(tempfile.mkdtemp(prefix="bench-years-", dir="."))
    workdir.mkdir(parents=True, exist_ok=True)
    disk = shutil.disk_usage(workdir)
    base = engine_rounds(TABLE_ID, args.rounds_per_game)
    journals = {"small": workdir / f"small-{args.small}.sqlite", "big": workdir / f"big-{args.big}.sqlite"}
    sizes = {"small": args.small, "big": args.big}
    built: dict[str, Any] = {}
    for label, path in journals.items():
        if args.reuse and path.exists():
            built[label] = {"entries": sizes[label], "reused": True, "file_bytes": _bytes(path)}
            if label == "big" and args.extend_open_to:
                built[label]["extended"] = extend_open(
                    path,
                    [list(batch) for batch in base],
                    table_id=TABLE_ID,
                    round_step=ROUND_STEP,
                    open_entries=args.extend_open_to,
                )
            continue
        for stale in path.parent.glob(path.name + "*"):
            if stale.is_dir():
                shutil.rmtree(stale)
            else:
                stale.unlink()
        if label == "big" and args.writer == "bulk":
            started_utc = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
            built[label] = build_bulk(
                path,
                sizes[label],
                [list(batch) for batch in base],
                table_id=TABLE_ID,
                start=args.start,
                round_step=ROUND_STEP,
                segment_entries=args.segment_entries,
                open_entries=args.open_entries
                if args.open_entries is not None
                else args.segment_entries // 2,
                retag=retagged,
            )
            built[label].update(
                writer="bulk (bench/years_bulk.py)",
                started_utc=started_utc,
                stopped_utc=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
                file_bytes=_bytes(path),
            )
            continue
        built[label] = build(
            path,
            sizes[label],
            [list(batch) for batch in base],
            segment_entries=args.segment_entries,
            rounds_per_commit=args.rounds_per_commit,
        )
    if args.build_only:
        print(
            json.dumps({"benchmark": "years-build", "cpu_count": os.cpu_count(), "journals": built}, indent=2)
        )
        return
    figures: dict[str, dict[str, float]] = {"small": {}, "big": {}}
    thunks = {label: dict(measure(path, workdir, args.repeat)) for label, path in journals.items()}
    for name in thunks["small"]:
        for label in ("small", "big"):  # side by side, interleaved
            figures[label][name] = round(thunks[label][name](), 4)
    for label, path in journals.items():
        figures[label].update(in_process(path, args.repeat))
    if args.only_reads:
        journals = {}  # neither the panel's nor run's figures
    for label, path in journals.items():
        panel = asyncio.run(_panel_figures(path, workdir, _middle(path), args.repeat))
        figures[label].update({k: round(v, 4) for k, v in panel.items()})
    # Last: run appends to the journal (table_opened, a round, its close).
    # Twice: with sealed segments (docs/journal.md "Segments and seals") the first start on a journal
    # that is due seals it (its whole file read once), the next start proves the open segment only.
    for label in journals:
        figures[label]["run_to_table_opened_s"] = round(_run_to_table_opened_s(journals[label], workdir), 3)
        figures[label]["second_run_to_table_opened_s"] = round(
            _run_to_table_opened_s(journals[label], workdir), 3
        )
    ratios = {
        name: round(figures["big"][name] / figures["small"][name], 2)
        for name in figures["small"]
        if figures["small"][name] > 0
    }
    print(
        json.dumps(
            {
                "benchmark": "years",
                "cpu_count": os.cpu_count(),
                "disk_free_bytes_before": disk.free,
                "journals": built,
                "figures_s": figures,
                "big_over_small": ratios,
                "target": "each figure on the big journal within 2x of the small one's",
                "within_2x": {name: ratio <= 2.0 for name, ratio in ratios.items()},
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
