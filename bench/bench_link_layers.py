"""CPU a frame of the stream decoder and CPU an item of the daemon's one queue (issue 28), optionally
beside another checkout's decoder, both in this one process so they meet the same load.

- ``framing``: ``FrameDecoder.feed`` over a realistic mix of v2 DATA frames (bench/bench_protocol.py's
  message mix) fed in reads of ``--read-bytes`` bytes: microseconds of CPU a frame, fastest of
  ``--repeat``.
- ``queue``: a writer putting items three at a time then yielding to the loop, one reader getting an item
  then draining what waits (the engine loop's pattern): microseconds of CPU an item, loop turns
  included, for ``asyncio.Queue`` and controller/one_queue.py's ``OneReaderQueue``.

Prints one JSON object. Usage: python bench/bench_link_layers.py [--before DIR] [--frames N]
[--read-bytes N] [--repeat N]
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import os
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_protocol  # noqa: E402 - the message mix, beside this file

from controller.one_queue import OneReaderQueue  # noqa: E402
from firmware_protocol import framing  # noqa: E402
from firmware_protocol.constants import KIND_DATA, PROTOCOL_V2, SENDER_DEVICE  # noqa: E402

QUEUE_ITEMS = 60_000


def _framing_of(root: Path) -> ModuleType:
    """Another checkout's framing module, loaded under its own name beside this one's."""
    spec = importlib.util.spec_from_file_location("framing_before", root / "firmware_protocol" / "framing.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["framing_before"] = module
    spec.loader.exec_module(module)
    return module


def _fastest_s(repeat: int, run: Callable[[], object]) -> float:
    best_s = float("inf")
    for _ in range(repeat):
        started_s = time.process_time()
        run()
        best_s = min(best_s, time.process_time() - started_s)
    return best_s


async def _pattern(queue: Any) -> None:
    got = 0

    async def reader() -> None:
        nonlocal got
        while got < QUEUE_ITEMS:
            await queue.get()
            got += 1
            while not queue.empty():
                queue.get_nowait()
                got += 1

    task = asyncio.create_task(reader())
    for first in range(0, QUEUE_ITEMS, 3):
        for item in range(first, first + 3):
            queue.put_nowait(item)
        await asyncio.sleep(0)
    await asyncio.wait_for(task, 60)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, default=None, help="a checkout whose decoder runs beside")
    parser.add_argument("--frames", type=int, default=5000)
    parser.add_argument("--read-bytes", type=int, default=120)
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    messages = bench_protocol.message_mix(args.frames, random.Random(1))
    stream = b"".join(
        framing.encode_frame(
            KIND_DATA,
            SENDER_DEVICE,
            bench_protocol.DEVICE_ID,
            seq,
            message.encode(),
            key=bytes(32),
            version=PROTOCOL_V2,
        )
        for seq, message in enumerate(messages, start=1)
    )
    reads = [stream[start : start + args.read_bytes] for start in range(0, len(stream), args.read_bytes)]
    decoders: dict[str, ModuleType] = {"this": framing}
    if args.before is not None:
        decoders["before"] = _framing_of(args.before.resolve())

    def decode(module: ModuleType) -> int:
        decoder = module.FrameDecoder()
        frames = sum(len(decoder.feed(data)) for data in reads)
        assert frames == len(messages), frames
        return frames

    figures: dict[str, Any] = {"load_average_1m": round(os.getloadavg()[0], 2), "frames": len(messages)}

    def per_frame_us(module: ModuleType) -> float:
        return round(_fastest_s(args.repeat, lambda: decode(module)) / len(messages) * 1e6, 3)

    def per_item_us(make: Callable[[], Any]) -> float:
        return round(_fastest_s(5, lambda: asyncio.run(_pattern(make()))) / QUEUE_ITEMS * 1e6, 3)

    figures["framing_us_per_frame"] = {label: per_frame_us(module) for label, module in decoders.items()}
    figures["queue_us_per_item"] = {
        "asyncio.Queue": per_item_us(asyncio.Queue),
        "OneReaderQueue": per_item_us(OneReaderQueue),
    }
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
