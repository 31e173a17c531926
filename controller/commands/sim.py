"""`flushtable sim`: start a simulated table's devices and print where each one listens."""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from controller.config import load_config
from controller.errors import UserError
from controller.simulation.scenario import load_scenario, sensor_spots
from drivers.urls import SimUrl, parse_device_url
from sim_devices.runner import (
    ConfiguredDevice,
    default_specs,
    firmware_class,
    serve_table,
    specs_from_devices,
)
from sim_devices.scenario import Scenario
from sim_devices.table import SimDeviceSpec

NAME = "sim"
HELP = "serve simulated table devices (shuffler, bet sensors, dealer display) over pseudo-terminals or TCP"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", type=Path, help="table configuration (TOML); default: the embedded table")
    parser.add_argument("--scenario", type=Path, help="scenario file (TOML) of timed bets, keys and faults")
    parser.add_argument("--run-dir", type=Path, default=Path("var/sim"), help="where the pty symlinks go")
    parser.add_argument("--seed", type=int, default=None, help="seed the shuffles (default: the OS's CSPRNG)")
    parser.add_argument(
        "--duration", type=float, default=None, metavar="SECONDS", help="stop after this long"
    )
    parser.add_argument(
        "--time-scale",
        type=float,
        default=1.0,
        help="run the protocol's timers this many times faster (the controller must match; default 1)",
    )


def _configured_specs(path: Path) -> list[SimDeviceSpec]:
    config = load_config(path)  # raises UserError (ConfigError) naming file and key
    devices = []
    for device in config.devices.values():
        address = parse_device_url(device.url)  # checked by the configuration: the one parser
        simulated = address if isinstance(address, SimUrl) else None
        devices.append(
            ConfiguredDevice(
                device.name,
                device.kind,
                device.url,
                device.key,
                transport=None if simulated is None else simulated.transport,
                tcp_port=None if simulated is None else simulated.tcp_port,
            )
        )
    try:
        # The sensors' spots as the daemon's own simulation has them: the progressive's spot, the bank's.
        spots = sensor_spots(config.banking.mode, progressive=config.progressive is not None)
        return specs_from_devices(devices, seats=config.seats, spots=spots)
    except ValueError as error:
        raise UserError(f"{path}: {error}") from None


def run(args: argparse.Namespace) -> int:
    if args.duration is not None and args.duration < 0:
        raise UserError(f"--duration: {args.duration} is negative")
    if not args.time_scale > 0:
        raise UserError(f"--time-scale: {args.time_scale} must be positive")
    specs = _configured_specs(args.config) if args.config is not None else default_specs()
    scenario: Scenario | None = None
    if args.scenario is not None:  # checked whole before any device is served
        sensors = [spec for spec in specs if spec.kind == "bet_sensors"] or specs
        scenario = load_scenario(
            args.scenario,
            {spec.name: firmware_class(spec.kind) for spec in specs},
            seats=min(spec.seats for spec in sensors),
            spots=min(spec.spots for spec in sensors),
        )
    try:
        asyncio.run(
            serve_table(
                specs,
                args.run_dir.resolve(),
                out=sys.stdout,
                scenario=scenario,
                seed=args.seed,
                time_scale=args.time_scale,
                duration_s=args.duration,
            )
        )
    except OSError as error:
        raise UserError(f"--run-dir {args.run_dir}: {error.strerror or error}") from None
    return 0
