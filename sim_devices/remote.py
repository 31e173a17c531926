"""Simulated devices in a process of their own, as real devices are: `python -m sim_devices.remote`.

A simulated table normally runs its devices on the daemon's event loop (sim_devices/table.py),
so their half of every frame (COBS, CRC, HMAC, the Link) is paid on the controller's core. A real
table's devices pay it on their own processors. ``RemoteSimTable`` starts the same devices, over
pseudo-terminals or TCP, in a child Python process on the other core; the controller reaches them
through the same drivers and URLs, and the simulated people still put chips on the sensors and press
the display's keys through a small control channel: JSON lines on the child's standard input.

    parent -> child, first line:  {"specs": [...], "run_dir": "...", "seed": 1, "noise": {...} | null}
    child -> parent, one line:    {"ready": true, "urls": {"shuffler": "serial:///dev/pts/5", ...}}
                                   or {"error": "..."} and exit 1
    parent -> child, then:         {"op": "place", "device": "sensors", "seat": 1, "spot": 0,
                                    "amount_cents": 500}
                                   {"op": "press", "device": "display", "key": "confirm", "seat": null}
                                   (each line a scenario step done now: any action of
                                   docs/devices.md "Scenario files", with its fields; a bad line is
                                   refused on the child's standard error and the devices go on)
    end of the child's standard input (the parent closed it, or died): the devices stop, exit 0.

Only the transports a separate process can serve: "pty" and "tcp" (the in-process "sim" hub and the
virtual USB backend live inside one process). Used by bench/bench_table.py ``--devices-process`` and
the simulation harness's ``devices_process`` option; never on a real table (a real table has real devices).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import structlog

from sim_devices.noise import NoiseRates
from sim_devices.scenario import Step, apply_step
from sim_devices.table import SimDeviceSpec, SimTable

log = structlog.get_logger("flushtable.sim")

REMOTE_TRANSPORTS = frozenset({"pty", "tcp"})
START_TIMEOUT_S = 30.0  # the child imports, opens its ports and says where they are
STOP_TIMEOUT_S = 10.0  # then it is killed


class RemoteSimError(RuntimeError):
    """The devices' process could not start, or refused what it was sent."""


def _spec_json(spec: SimDeviceSpec) -> dict[str, Any]:
    fields = dataclasses.asdict(spec)
    fields["key"] = spec.key.hex()
    return fields


def _spec_from_json(fields: dict[str, Any]) -> SimDeviceSpec:
    versions = tuple(int(version) for version in fields.get("protocol_versions", (1, 2)))
    return SimDeviceSpec(
        **{**fields, "key": bytes.fromhex(str(fields["key"])), "protocol_versions": versions}
    )


# --- the parent's side ------------------------------------------------------------------------------
@dataclass(slots=True)
class RemoteSensors:
    """The bet sensors in the devices' process: chips put on a spot (or taken off: amount 0)."""

    table: RemoteSimTable
    name: str

    def place(self, seat: int, spot: int, amount_cents: int, chip_count: int | None = None) -> None:
        order: dict[str, Any] = {"op": "place", "device": self.name, "seat": seat, "spot": spot}
        order["amount_cents"] = amount_cents
        if chip_count is not None:
            order["chip_count"] = chip_count
        self.table.send(order)


@dataclass(slots=True)
class RemoteDisplay:
    """The dealer display in the devices' process: a key pressed."""

    table: RemoteSimTable
    name: str

    def press(self, key: str, seat: int | None = None) -> None:
        self.table.send({"op": "press", "device": self.name, "key": key, "seat": seat})


@dataclass(slots=True)
class RemoteSimTable:
    """A SimTable served by a child process (see the module docstring)."""

    specs: list[SimDeviceSpec]
    run_dir: Path
    seed: int | None = None
    noise: NoiseRates | None = None
    urls: dict[str, str] = field(default_factory=dict)
    _process: asyncio.subprocess.Process | None = None

    async def start(self) -> None:
        for spec in self.specs:
            if spec.transport not in REMOTE_TRANSPORTS:
                raise RemoteSimError(
                    f"device {spec.name}: a {spec.transport} device lives inside one process; "
                    f"only {', '.join(sorted(REMOTE_TRANSPORTS))} can be served by another"
                )
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self._process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "sim_devices.remote",
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
        )
        setup = {
            "specs": [_spec_json(spec) for spec in self.specs],
            "run_dir": str(self.run_dir),
            "seed": self.seed,
            "noise": None if self.noise is None else dataclasses.asdict(self.noise),
        }
        try:
            self.urls = await self._handshake(setup)
        except BaseException:
            await self.stop()  # whatever went wrong, no child is left behind
            raise

    async def _handshake(self, setup: dict[str, Any]) -> dict[str, str]:
        process = self._process
        assert process is not None
        assert process.stdin is not None
        assert process.stdout is not None
        try:
            async with asyncio.timeout(START_TIMEOUT_S):
                process.stdin.write(json.dumps(setup).encode() + b"\n")
                await process.stdin.drain()
                line = await process.stdout.readline()
        except TimeoutError:
            raise RemoteSimError(f"the devices' process did not start within {START_TIMEOUT_S:g} s") from None
        except ConnectionError as error:
            raise RemoteSimError(f"the devices' process went away at start: {error}") from None
        try:
            answer = json.loads(line) if line else {"error": "the devices' process exited at start"}
        except ValueError:
            answer = {"error": f"the devices' process answered {line[:80]!r}"}
        urls = answer.get("urls") if isinstance(answer, dict) else None
        if not isinstance(answer, dict) or not answer.get("ready") or not isinstance(urls, dict):
            said = answer.get("error") if isinstance(answer, dict) else None
            raise RemoteSimError(str(said or f"the devices' process answered {line[:80]!r}"))
        return {str(name): str(url) for name, url in urls.items()}

    def send(self, order: dict[str, Any]) -> None:
        """One control line to the devices' process (buffered by the pipe; never blocks the loop)."""
        process = self._process
        if process is None or process.stdin is None or process.stdin.is_closing():
            raise RemoteSimError("the devices' process is not running")
        process.stdin.write(json.dumps(order).encode() + b"\n")

    async def stop(self) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        if process.returncode not in (None, 0):
            log.error("sim_devices_process_exited", returncode=process.returncode)
        if process.stdin is not None and not process.stdin.is_closing():
            process.stdin.close()  # end of input: the child stops its devices and exits
            with contextlib.suppress(ConnectionError):
                await process.stdin.wait_closed()
        try:
            async with asyncio.timeout(STOP_TIMEOUT_S):
                await process.wait()
        except TimeoutError:
            process.kill()
            await process.wait()

    def url(self, name: str) -> str:
        return self.urls[name]

    def bet_sensors(self, name: str = "sensors") -> RemoteSensors:
        return RemoteSensors(self, name)

    def dealer_display(self, name: str = "display") -> RemoteDisplay:
        return RemoteDisplay(self, name)


# --- the child's side -------------------------------------------------------------------------------
async def _serve(lines: asyncio.StreamReader, say: Any) -> int:
    setup = json.loads(await lines.readline())
    specs: Sequence[SimDeviceSpec] = [_spec_from_json(fields) for fields in setup["specs"]]
    noise = None if setup.get("noise") is None else NoiseRates(**setup["noise"])
    table = SimTable(list(specs), run_dir=Path(setup["run_dir"]), seed=setup.get("seed"), noise=noise)
    try:
        await table.start()
    except Exception as error:  # the parent shows it as one line; no traceback
        say({"error": f"{type(error).__name__}: {error}"})
        return 1
    try:
        say({"ready": True, "urls": {spec.name: table.url(spec.name) for spec in specs}})
        while line := await lines.readline():
            try:
                _apply(table, json.loads(line))
            except (ValueError, KeyError, TypeError) as error:
                # One bad control line is refused (on standard error); the devices go on.
                log.error("control_line_refused", line=line[:200].decode(errors="replace"), error=str(error))
    finally:
        await table.stop()
    return 0


def _apply(table: SimTable, order: dict[str, Any]) -> None:
    """One control line is one scenario step, applied now by the scenario's own apply_step (the one
    place that maps an action to a device call: place, remove, press, fault, unplug, ...)."""
    fields = {name: value for name, value in order.items() if name not in ("op", "device")}
    step = Step(at_s=0.0, device=str(order["device"]), action=str(order["op"]), fields=fields, number=1)
    apply_step(step, table.devices[step.device])


async def _main() -> int:
    # The devices' own log lines go to standard error, warnings and worse: standard output is the
    # control channel's.
    structlog.configure(
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING),
    )
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)

    # The control answer goes to a copy of the original standard output; file descriptor 1 itself now
    # points at standard error, so a stray print can neither corrupt the answer nor fill a pipe the
    # parent stops reading after it.
    control_out = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)

    def say(answer: dict[str, Any]) -> None:
        control_out.write(json.dumps(answer) + "\n")
        control_out.flush()

    return await _serve(reader, say)


if __name__ == "__main__":
    sys.exit(asyncio.run(_main()))
