"""The floor client's intake alone, side by side: the process CPU its protocol parser spends on the
floor's deliveries (docs/floor.md "Tenth stop"), for each checkout given, alternating.

    python bench/bench_floor_intake.py [--code DIR ...] [--messages 60000] [--repeat 3]

Each turn runs in a child process of its own (``--code`` first on its import path: e.g. ``git archive
main | tar -x -C /tmp/before``; default: this checkout): 300 tables' HMSG deliveries (a JetStream ack
subject, a ``Nats-Msg-Id`` header, a body of about 400 bytes, as the floor's consumer sends them) fed
to a ``FloorClient``'s parser in nats-py's 32 KiB reads, each handed to a raw handler; the least of
five passes, in microseconds of process CPU a delivery. No server: the parser's work only, which the
whole floor's figures (bench/bench_floor_cpu.py) cannot resolve on a loaded machine.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

from code_turns import alternate_codes

_READ_SIZE = 32768  # nats-py's DEFAULT_BUFFER_SIZE: what its read loop hands its parser at most
_RAW_SID = 7
_PASSES = 5

_CHILD = """
import asyncio, sys, time
from controller.floor.intake import FloorClient

def frames(count: int) -> bytes:
    out = []
    for n in range(count):
        table = n % 300
        subject = b"flushtable.3.1.T%03d.journal" % table
        reply = b"$JS.ACK.FLUSHTABLE.floor.1.%d.%d.1764912345123456789.%d" % (n + 1, n + 1, count - n)
        headers = b"NATS/1.0\\r\\nNats-Msg-Id: T%03d:%d:5f3c2a\\r\\n\\r\\n" % (table, n)
        body = b'{"table_id":"T%03d","seq":%d,"x":"%s"}' % (table, n, b"a" * 380)
        sizes = b"%d %d" % (len(headers), len(headers) + len(body))
        out.append(b"HMSG %s %d %s %s\\r\\n%s%s\\r\\n" % (subject, RAW_SID, reply, sizes, headers, body))
    return b"".join(out)

async def main(count: int) -> None:
    client = FloorClient()
    got = []
    client.deliver_raw(RAW_SID, got.append)
    client._subs[RAW_SID] = object()  # nats-py's path (before) skips a message of no subscription
    data = frames(count)
    reads = [data[at : at + READ_SIZE] for at in range(0, len(data), READ_SIZE)]
    least = float("inf")
    for _ in range(PASSES):
        got.clear()
        started = time.process_time()
        for read in reads:
            await client._ps.parse(read)
        least = min(least, time.process_time() - started)
        assert len(got) == count, len(got)
    print(least / count * 1e6)

asyncio.run(main(int(sys.argv[1])))
"""


def _turn(code: Path, messages: int) -> float:
    child = _CHILD.replace("RAW_SID", str(_RAW_SID)).replace("READ_SIZE", str(_READ_SIZE))
    child = child.replace("PASSES", str(_PASSES))
    env = {**os.environ, "PYTHONPATH": str(code)}
    done = subprocess.run(
        [sys.executable, "-c", child, str(messages)],
        env=env,
        cwd=code,
        capture_output=True,
        text=True,
        check=True,
    )
    return round(float(done.stdout.strip()), 2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--code", action="append", default=[], help="a checkout to run the intake from")
    parser.add_argument("--messages", type=int, default=60_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    figures = alternate_codes(args.code, args.repeat, lambda code: _turn(code, args.messages))
    print(
        json.dumps({"messages": args.messages, "us_cpu_a_delivery": figures, "load_average": os.getloadavg()})
    )


if __name__ == "__main__":
    main()
