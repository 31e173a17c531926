"""Fuzz the receiving side of the firmware protocol with random and mutated inputs; any exception fails.

Each input goes, according to its number, to one of:
- ``decode_message`` with a random or mutated payload (only FieldError may come out);
- ``CaptureDecoder`` with random bytes or mutated valid frames (never raises; a mutated frame must
  never verify as a different frame);
- a fresh or an established ``Link`` (controller or device role; a v1 session or a v2 one with a window
  of 1..8, sometimes after a reconnect that resumed its streams) fed random bytes, mutated frames (v1
  and v2 layouts) and replays, then its timers (never raises; never delivers a message that was not
  sent).

Mutations: bit flips, byte changes, insertions, deletions, truncation, duplication of a slice, splices
of two frames, and random junk around them. Seeds make every run reproducible.

Usage: python bench/fuzz_protocol.py [--inputs N] [--workers W] [--seed S]
Prints one JSON object: inputs run, exceptions (must be 0), seconds, and what was accepted.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import random
import time
import traceback
from typing import Any

from firmware_protocol import (
    CardDealt,
    DealerKey,
    DeviceIdentity,
    Link,
    Message,
    MessageReceived,
    ShowText,
    SpotState,
    Status,
)
from firmware_protocol.capture import CaptureDecoder
from firmware_protocol.constants import KIND_ACK, KIND_DATA, PROTOCOL_V2, SENDER_CONTROLLER, SENDER_DEVICE
from firmware_protocol.errors import FieldError
from firmware_protocol.framing import encode_frame
from firmware_protocol.messages import decode_message
from firmware_protocol.vector_inputs import VECTOR_DEVICE_ID, VECTOR_DEVICE_KEY
from firmware_protocol.vectors import build_vectors, build_vectors_v2

IDENTITY = DeviceIdentity("shuffler", "fuzz", "SN-F", "1.0")
SEEDS_OF_MESSAGES: list[Message] = [
    CardDealt(position=3, index=1, card=40),
    SpotState(seat=2, spot=1, amount_cents=2500, chip_count=2, locked=True),
    Status(state="fault", fault_code=9, lamp="red"),
    DealerKey(key="fold_seat", seat=4),
    ShowText(text="hello €"),
]


def mutate(data: bytes, rng: random.Random, others: list[bytes]) -> bytes:
    buffer = bytearray(data)
    for _ in range(rng.choice((1, 1, 1, 2, 3, 8))):
        choice = rng.randrange(9)
        position = rng.randrange(len(buffer) + 1)
        if choice == 0 and buffer:
            index = rng.randrange(len(buffer))
            buffer[index] ^= 1 << rng.randrange(8)
        elif choice == 1 and buffer:
            buffer[rng.randrange(len(buffer))] = rng.randrange(256)
        elif choice == 2:
            buffer[position:position] = rng.randbytes(rng.randrange(1, 6))
        elif choice == 3 and buffer:
            del buffer[position : position + rng.randrange(1, 6)]
        elif choice == 4:
            del buffer[position:]
        elif choice == 5 and buffer:
            start = rng.randrange(len(buffer))
            buffer[position:position] = buffer[start : start + rng.randrange(1, 20)]
        elif choice == 6:
            other = rng.choice(others)
            buffer = buffer[:position] + other[rng.randrange(len(other)) :]
        elif choice == 7:
            buffer[position:position] = b"\x00"
        else:
            buffer = (
                bytearray(rng.randbytes(rng.randrange(0, 8))) + buffer + rng.randbytes(rng.randrange(0, 8))
            )
    return bytes(buffer)


class Fuzzer:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        vectors = build_vectors() + build_vectors_v2()
        self.frames = [bytes.fromhex(vector["frame"]) for vector in vectors]
        self.valid_messages = {json.dumps(v["message"], sort_keys=True) for v in vectors if "message" in v}
        self.keys = [bytes.fromhex(vector["key"]) for vector in vectors]
        self.payloads = [message.encode() for message in SEEDS_OF_MESSAGES]
        self.accepted_mutants = 0
        self.delivered = 0

    def one(self, number: int) -> None:
        target = number % 4
        if target == 0:
            self.fuzz_payload()
        elif target == 1:
            self.fuzz_capture()
        else:
            self.fuzz_link(number)

    def fuzz_payload(self) -> None:
        rng = self.rng
        payload = rng.randbytes(rng.randrange(0, 60)) if rng.random() < 0.3 else rng.choice(self.payloads)
        payload = mutate(payload, rng, self.payloads)
        try:
            message = decode_message(payload)
        except FieldError:
            return
        if message.encode() != payload:
            raise AssertionError(f"accepted a non-canonical payload {payload.hex()}")

    def fuzz_capture(self) -> None:
        rng = self.rng
        if rng.random() < 0.2:
            data = rng.randbytes(rng.randrange(0, 400))
        else:
            data = mutate(b"".join(rng.choices(self.frames, k=rng.randrange(1, 4))), rng, self.frames)
        decoder = CaptureDecoder([rng.choice(self.keys)])
        pieces = sorted(rng.randrange(len(data) + 1) for _ in range(rng.randrange(3)))
        for start, end in zip([0, *pieces], [*pieces, len(data)], strict=True):
            for report in decoder.feed(data[start:end]):
                self._check_report(report)
        for report in decoder.finish():
            self._check_report(report)

    def _check_report(self, report: dict[str, Any]) -> None:
        json.dumps(report)
        if report["ok"] and report.get("verified"):
            self.accepted_mutants += 1
            # Whatever verifies must be exactly one of the valid vectors (a mutation that left one intact).
            keys = ("kind", "sender", "device_id", "seq", "version", "type", "fields")
            seen = {key: report[key] for key in keys if key in report}
            if json.dumps(seen, sort_keys=True) not in self.valid_messages:
                raise AssertionError(f"a verified frame that was never sent: {report}")

    def fuzz_link(self, number: int) -> None:
        rng = self.rng
        v1 = number % 3 == 0  # a third v1 sessions (a v1 device), the rest v2 with a random window
        window = rng.choice((1, 2, 4, 8))
        controller = Link.controller(
            {VECTOR_DEVICE_ID: VECTOR_DEVICE_KEY}, random_bytes=rng.randbytes, window=window
        )
        device = Link.device(
            VECTOR_DEVICE_ID,
            VECTOR_DEVICE_KEY,
            IDENTITY,
            random_bytes=rng.randbytes,
            versions=(1,) if v1 else (1, 2),
            window=window,
        )
        now_s = 0.0
        sent: list[bytes] = []
        if number % 8 < 6:  # most of these establish a session first, to reach the sequenced paths
            sessions = 2 if rng.random() < 0.3 else 1  # sometimes a reconnect, to reach the resume paths
            for _ in range(sessions):
                controller.connect(now_s)
                for _ in range(3):
                    device.receive_data(controller.bytes_to_send(), now_s)
                    controller.receive_data(device.bytes_to_send(), now_s)
                if controller.is_up and device.is_up:
                    for _ in range(rng.randrange(1, 4)):
                        device.send(rng.choice(SEEDS_OF_MESSAGES[:4]), now_s)
                    sent.append(device.bytes_to_send())
                    controller.send(ShowText(text="fuzz"), now_s)
                    sent.append(controller.bytes_to_send())
                    if rng.random() < 0.5:  # some of it acknowledged, some still in flight
                        controller.receive_data(sent[-2], now_s)
                        device.receive_data(controller.bytes_to_send(), now_s)
                now_s += 0.1
        target = controller if number % 2 else device
        version = 1 if v1 else PROTOCOL_V2
        pool = (
            [wire for wire in sent if wire]  # (a side with nothing to say wrote nothing)
            + self.frames
            + [
                encode_frame(
                    KIND_DATA,
                    rng.choice((SENDER_CONTROLLER, SENDER_DEVICE)),
                    VECTOR_DEVICE_ID,
                    rng.randrange(10),
                    p,
                    key=VECTOR_DEVICE_KEY,
                    version=version,
                )
                for p in rng.sample(self.payloads, 2)
            ]
            + [
                encode_frame(
                    KIND_ACK,
                    rng.choice((SENDER_CONTROLLER, SENDER_DEVICE)),
                    VECTOR_DEVICE_ID,
                    rng.randrange(10),
                    rng.randbytes(4),
                    key=VECTOR_DEVICE_KEY,
                    version=PROTOCOL_V2,
                )
            ]
        )
        for _ in range(rng.randrange(1, 4)):
            data = (
                rng.randbytes(rng.randrange(0, 200))
                if rng.random() < 0.2
                else mutate(rng.choice(pool), rng, pool)
            )
            now_s += rng.uniform(0, 0.5)
            target.receive_data(data, now_s)
            target.handle_timers(now_s)
            target.bytes_to_send()
        for event in target.events():
            if isinstance(event, MessageReceived):
                self.delivered += 1
                if event.message not in SEEDS_OF_MESSAGES and event.message != ShowText(text="fuzz"):
                    raise AssertionError(f"delivered a message nobody sent: {event}")


def worker(arguments: tuple[int, int, int]) -> dict[str, Any]:
    seed, start, count = arguments
    fuzzer = Fuzzer(seed)
    failures: list[str] = []
    for number in range(start, start + count):
        try:
            fuzzer.one(number)
        except Exception:
            failures.append(traceback.format_exc(limit=6))
            if len(failures) >= 5:
                break
    return {
        "count": count,
        "failures": failures,
        "accepted": fuzzer.accepted_mutants,
        "delivered": fuzzer.delivered,
    }


def run(inputs: int, workers: int, seed: int, chunk: int = 10_000) -> dict[str, Any]:
    jobs = [(seed + start, start, min(chunk, inputs - start)) for start in range(0, inputs, chunk)]
    started = time.perf_counter()
    results: list[dict[str, Any]]
    if workers > 1:
        with multiprocessing.Pool(workers) as pool:
            results = pool.map(worker, jobs)
    else:
        results = [worker(job) for job in jobs]
    seconds = time.perf_counter() - started
    failures = [failure for result in results for failure in result["failures"]]
    return {
        "inputs": sum(result["count"] for result in results),
        "exceptions": len(failures),
        "seconds": round(seconds, 1),
        "inputs_per_s": round(inputs / seconds),
        "workers": workers,
        "seed": seed,
        "verified_frames_in_mutated_captures": sum(result["accepted"] for result in results),
        "messages_delivered_by_fuzzed_links": sum(result["delivered"] for result in results),
        "first_failures": failures[:3],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description="fuzz the firmware protocol's receiving side")
    parser.add_argument("--inputs", type=int, default=1_000_000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    summary = run(args.inputs, args.workers, args.seed)
    print(json.dumps(summary, indent=2))
    raise SystemExit(1 if summary["exceptions"] else 0)


if __name__ == "__main__":
    main()
