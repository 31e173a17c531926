"""The floor service's per-message path in one process, without I/O: each message of real tables taken
as a batch of the service takes it (``FloorService._take_all``: the subject, the decode, the checks, the
chain hash, the fold, the batch's rows), and the same stages on their own, in CPU microseconds per
message (the best of ``--repeat`` passes: the least disturbed by the machine's other work).

    python bench/bench_floor_take.py [--rounds 20] [--repeat 7] [--private-parts] [--code DIR] [--out FILE]

``--code DIR``: measure another checkout (e.g. ``git archive main | tar -x -C DIR``): its modules are
imported instead of this one's, so two revisions compare on one machine minutes apart (bench_floor_cpu.py
measures the whole service, its servers and the machine's load around it; this, the Python path alone).
Three simulated tables (one of each game, the real engine) play ``--rounds`` rounds; their entry bodies
are taken in order. Private parts are left out unless ``--private-parts``: then each round's entry's
private part follows it at once, so its commitment is held in memory (taking one of an entry of no round,
or whose commitment the batch does not hold, asks PostgreSQL, and this bench has no database). The
stages' figures (the decode aside, which reads every message) are per entry.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import random
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast


def _bodies(base: Path, rounds: int, *, private_parts: bool = False) -> list[tuple[str, bytes]]:
    from controller.journal.store import Journal  # noqa: PLC0415 - from the checkout under measure
    from controller.simulation.floor_tables import MIXED_GAMES, SimTable  # noqa: PLC0415
    from controller.uplink import wire  # noqa: PLC0415

    bodies: list[tuple[str, bytes]] = []
    for index, game in enumerate(MIXED_GAMES):
        table_id = f"W{index}"
        journal = Journal.open(base / f"{table_id}.sqlite", table_id, synchronous="OFF")
        try:
            sim = SimTable(journal, game, random.Random(index))
            for _ in range(rounds):
                sim.play_round()
            for stored in journal.entries():
                bodies.append((table_id, wire.entry_body(stored.public_json())))
                # A round's private part right after its entry: its commitment is then held in memory
                # (one of an entry of no round is asked of PostgreSQL, which this bench has not).
                if private_parts and stored.private_text is not None and stored.round_id is not None:
                    bodies.append((table_id, wire.private_body(table_id, stored.seq, stored.private_text)))
        finally:
            journal.close()
    return bodies


# Each delivery's header block, as an uplink's publish carries it.
_HEADERS = b"NATS/1.0\r\nNats-Msg-Id: W0:1:0123456789abcdef0123456789abcdef\r\nFlushtable-Pos: 1.0\r\n\r\n"


def _deliveries(bodies: list[tuple[str, bytes]], delivery: Any, raw_headers: Any) -> list[Any]:
    """Each body as the intake hands it to the batch, built with the ``Delivery`` and ``RawHeaders`` of
    the checkout under measure: with its stream sequence read at the intake (a delivery is its
    Incoming), or, in checkouts before that, without it (``Incoming.of`` read it in the batch)."""
    with_seq = "stream_seq" in delivery.__struct_fields__
    return [
        delivery(
            subject=f"flushtable.main.{table_id}.journal",
            reply=f"$JS.ACK.FLUSHTABLE.floor.1.{n}.{n}.1764912345123456789.5",
            data=body,
            headers=raw_headers(_HEADERS),
            **({"stream_seq": n} if with_seq else {}),
        )
        for n, (table_id, body) in enumerate(bodies, 1)
    ]


def _best_us(run: Callable[[], float], repeat: int) -> float:
    return round(min(run() for _ in range(repeat)), 2)


def bench(rounds: int, repeat: int, *, private_parts: bool = False) -> dict[str, Any]:
    from controller.floor import checks  # noqa: PLC0415 - from the checkout under measure
    from controller.floor.checks import TableProjection  # noqa: PLC0415
    from controller.floor.intake import Delivery, FloorClient, RawHeaders  # noqa: PLC0415
    from controller.floor.messages import Incoming, by_stream_seq  # noqa: PLC0415
    from controller.floor.service import FloorService  # noqa: PLC0415
    from controller.floor.store import Batch, table_row  # noqa: PLC0415
    from controller.journal.state import TableState  # noqa: PLC0415
    from controller.uplink import wire  # noqa: PLC0415

    base = Path(tempfile.mkdtemp(prefix="flushtable-bench-take-"))
    try:
        bodies = _bodies(base, rounds, private_parts=private_parts)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    tables = sorted({table_id for table_id, _ in bodies})
    deliveries = _deliveries(bodies, Delivery, RawHeaders)
    as_incoming = getattr(Incoming, "of", None) or (lambda delivery: delivery)
    count = len(deliveries)

    def projections() -> dict[str, TableProjection]:
        return {t: TableProjection(t, state=TableState(t)) for t in tables}

    def take_all() -> float:
        service: Any = FloorService.__new__(FloorService)
        FloorService.__init__(service, cast("Any", _Config()))
        held = projections()
        for table_id, projection in held.items():  # every table in memory, as in a running service
            if hasattr(service, "_projections"):
                service._projections._tables[table_id] = projection
            else:
                service._tables[table_id] = projection
        batch = Batch()
        loop = asyncio.new_event_loop()
        try:
            started = time.process_time()
            incoming = sorted(map(as_incoming, deliveries), key=by_stream_seq)
            loop.run_until_complete(service._take_all(None, batch, incoming))
            spent = time.process_time() - started
        finally:
            loop.close()
        if batch.quarantine or len(batch.entries) + len(batch.privates) != count:
            raise SystemExit(f"bench_floor_take: {len(batch.quarantine)} quarantined, {len(batch.entries)}")
        return spent / count * 1e6

    def decode() -> float:
        started = time.process_time()
        for _, body in bodies:
            wire.decode(body)
        return (time.process_time() - started) / count * 1e6

    wire_messages = [
        (
            f"flushtable.main.{table_id}.journal".encode(),
            f"$JS.ACK.FLUSHTABLE.floor.1.{n}.{n}.1764912345123456789.5".encode(),
            body,
        )
        for n, (table_id, body) in enumerate(bodies, 1)
    ]

    def intake() -> float:
        # The intake as nats-py's reader calls it for each message (FloorClient._process_msg: the reply's
        # stream sequence, the Delivery and its header block), then the one header every message is
        # asked for. Its coroutine never waits on this path, so one send runs it to its end.
        client = FloorClient()
        taken: list[Any] = []
        client.deliver_raw(1, taken.append)
        started = time.process_time()
        for subject, reply, body in wire_messages:
            with contextlib.suppress(StopIteration):
                client._process_msg(1, subject, reply, body, _HEADERS).send(None)
        for delivery in taken:
            delivery.headers.get("Nats-Stream-Source")
        spent = time.process_time() - started
        if len(taken) != count:
            raise SystemExit(f"bench_floor_take: the intake delivered {len(taken)} of {count}")
        return spent / count * 1e6

    decoded = [message for message in map(wire.decode, (body for _, body in bodies))
               if isinstance(message, wire.EntryMessage)]  # fmt: skip
    entries = len(decoded)

    def chain_and_fold() -> float:
        held = projections()
        batch = Batch()
        started = time.process_time()
        for entry in decoded:
            assert isinstance(entry, wire.EntryMessage)
            projection = held[entry.table_id]
            checks.chain_problem(projection, entry)
            checks.fold_entry(projection, entry)
            batch.add_entry(entry, 1)
        return (time.process_time() - started) / entries * 1e6

    folded = []  # each entry's projection after it, as a batch of that one entry leaves it
    for entry in decoded:
        assert isinstance(entry, wire.EntryMessage)
        folded.append(entry)

    def table_rows() -> float:
        # Each entry folded, then its table's row built as a batch that ended there writes it: the
        # batch's rows at their most (a batch of one message); a batch of many builds a row a table.
        held = projections()
        spent = 0.0
        for entry in folded:
            projection = held[entry.table_id]
            checks.fold_entry(projection, entry)
            started = time.process_time()
            table_row(projection)
            spent += time.process_time() - started
        return spent / entries * 1e6

    return {
        "messages": count,
        "private_parts": count - entries,
        "mean_body_bytes": round(sum(len(body) for _, body in bodies) / count),
        "intake_cpu_us_per_message": _best_us(intake, repeat),
        "take_all_cpu_us_per_message": _best_us(take_all, repeat),
        "decode_cpu_us_per_message": _best_us(decode, repeat),
        "chain_hash_fold_and_row_cpu_us_per_message": _best_us(chain_and_fold, repeat),
        "table_row_after_each_entry_cpu_us_per_message": _best_us(table_rows, repeat),
    }


class _Config:
    """What the service reads of its configuration while it is made and takes a batch: its consumer's
    name and its reconnection backoff (read when it is made)."""

    consumer = "floor"
    backoff_initial_s = 0.2
    backoff_max_s = 5.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--private-parts", action="store_true", help="each round's private parts too")
    parser.add_argument("--code", default=None, help="a checkout to measure (default: this one)")
    parser.add_argument("--out", default=None, help="also write the JSON to bench/results/FILE")
    args = parser.parse_args()
    code = Path(args.code).resolve() if args.code else Path(__file__).resolve().parents[1]
    sys.path.insert(0, str(code))
    from controller.logs import configure_logging  # noqa: PLC0415 - from the checkout under measure

    configure_logging(level="warning")
    figures = {"code": str(code), **bench(args.rounds, args.repeat, private_parts=args.private_parts)}
    print(json.dumps(figures))
    if args.out:
        results = Path(__file__).resolve().parent / "results"
        (results / args.out).write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    main()
