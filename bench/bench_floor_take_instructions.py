"""The floor's take counted in instructions a message (valgrind's callgrind), not timed: the count does
not move with the machine's other work, so two revisions compare on a loaded machine (docs/floor.md
"Eleventh stop: the take" and "Twelfth stop: the take compiled with mypyc").

    python bench/bench_floor_take_instructions.py [--rounds 20] [--private-parts] [--code DIR]...

For each ``--code`` checkout (default: this one), ``bench_floor_take.py``'s bodies (three simulated
tables, the real engine; made once, by this checkout, outside valgrind) are taken as its ``take_all``
stage takes them (every table held, one ``Batch``, ``FloorService._take_all``) after one warm pass, once
and then three times, each under callgrind; (three passes' count less one's) / 2 / messages is a pass's
instructions a message, without the start, the imports and the warm pass. ``PYTHONHASHSEED=0``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import pickle
import random
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, cast

_TOTAL = re.compile(r"^summary:\s+(\d+)", re.MULTILINE)


def _take(code: Path, bodies_file: Path, passes: int) -> None:
    """Inside valgrind: one warm pass, then ``passes`` passes of the take."""
    sys.path.insert(0, str(code))
    sys.path.insert(1, str(Path(__file__).resolve().parent))
    from bench_floor_take import _Config, _deliveries  # noqa: PLC0415 - the take bench's configuration, deliveries

    from controller.floor.checks import TableProjection  # noqa: PLC0415 - from the checkout under measure
    from controller.floor.intake import Delivery, RawHeaders  # noqa: PLC0415
    from controller.floor.messages import by_stream_seq  # noqa: PLC0415
    from controller.floor.service import FloorService  # noqa: PLC0415
    from controller.floor.store import Batch  # noqa: PLC0415
    from controller.journal.state import TableState  # noqa: PLC0415
    from controller.logs import configure_logging  # noqa: PLC0415

    configure_logging(level="warning")
    bodies: list[tuple[str, bytes]] = pickle.loads(bodies_file.read_bytes())
    deliveries = _deliveries(bodies, Delivery, RawHeaders)
    tables = sorted({table_id for table_id, _ in bodies})

    def take_all() -> None:
        service: Any = FloorService(cast("Any", _Config()))
        for table_id in tables:
            service._projections._tables[table_id] = TableProjection(table_id, state=TableState(table_id))
        batch = Batch()
        loop = asyncio.new_event_loop()
        try:
            loop.run_until_complete(service._take_all(None, batch, sorted(deliveries, key=by_stream_seq)))
        finally:
            loop.close()
        if batch.quarantine or len(batch.entries) + len(batch.privates) != len(bodies):
            raise SystemExit(f"bench_floor_take_instructions: {len(batch.quarantine)} quarantined")

    for _ in range(1 + passes):
        take_all()


def _instructions(code: Path, bodies_file: Path, passes: int, work: Path) -> int:
    out = work / f"callgrind.{passes}.out"
    subprocess.run(
        ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable, __file__,
         "--inside", str(code), str(bodies_file), str(passes)],
        check=True, env={**os.environ, "PYTHONHASHSEED": "0"}, capture_output=True,
    )  # fmt: skip
    found = _TOTAL.search(out.read_text())
    if found is None:
        raise SystemExit(f"bench_floor_take_instructions: no summary in {out}")
    return int(found.group(1))


def main() -> None:
    if len(sys.argv) == 5 and sys.argv[1] == "--inside":
        _take(Path(sys.argv[2]), Path(sys.argv[3]), int(sys.argv[4]))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--private-parts", action="store_true", help="each round's private parts too")
    parser.add_argument("--code", action="append", default=[], help="a checkout to count (repeatable)")
    args = parser.parse_args()
    here = Path(__file__).resolve().parents[1]
    sys.path.insert(0, str(here))
    sys.path.insert(1, str(Path(__file__).resolve().parent))
    from bench_floor_take import _bodies  # noqa: PLC0415 - the take bench's bodies, made by this checkout

    from controller.logs import configure_logging  # noqa: PLC0415

    configure_logging(level="warning")
    work = Path(tempfile.mkdtemp(prefix="flushtable-bench-take-instructions-"))
    try:
        random.seed(0)
        bodies = _bodies(work, args.rounds, private_parts=args.private_parts)
        bodies_file = work / "bodies.pickle"
        bodies_file.write_bytes(pickle.dumps(bodies))
        figures: dict[str, Any] = {"messages": len(bodies)}
        for code in [Path(c).resolve() for c in args.code] or [here]:
            one = _instructions(code, bodies_file, 1, work)
            three = _instructions(code, bodies_file, 3, work)
            figures[str(code)] = round((three - one) / 2 / len(bodies))
            print(json.dumps({"code": str(code), "instructions_per_message": figures[str(code)]}), flush=True)
        print(json.dumps(figures))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
