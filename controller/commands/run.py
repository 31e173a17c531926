"""`flushtable run`: the table daemon (controller/daemon.py); a table with simulated devices (the
embedded default) runs through the simulation harness (controller/simulation/table.py)."""

from __future__ import annotations

import argparse
import asyncio
import socket
from pathlib import Path

from controller.config import TableConfig, load_config
from controller.daemon import RunOptions, TableDaemon
from controller.errors import UserError
from controller.files import check_database_file, check_writable_file
from controller.integrity_watch import DEFAULT_EVERY_ROUNDS
from controller.logs import configure_logging_for
from controller.simulation.table import SimulatedTable, SimulationOptions
from controller.simulation.table import simulated as any_simulated
from controller.software import VerifiedRelease

NAME = "run"
HELP = "run the table: devices, round engine, journal and panel (with no config: a simulated table)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    _add_table_options(parser)
    _add_log_options(parser)
    _add_check_and_simulation_options(parser)


def _add_table_options(parser: argparse.ArgumentParser) -> None:
    """What the table runs: its configuration, journal, rounds, players and panel."""
    parser.add_argument("--config", type=Path, default=None, help="the table's TOML configuration")
    parser.add_argument("--journal", type=Path, default=None, help="the journal file (overrides the config)")
    parser.add_argument(
        "--new-journal",
        action="store_true",
        help="start a new journal (refused if the journal file has any content; docs/journal.md)",
    )
    parser.add_argument("--rounds", type=int, default=None, help="play N rounds, then exit 0")
    parser.add_argument("--seed", type=int, default=None, help="reproducible shuffles and simulated players")
    autoplay = parser.add_mutually_exclusive_group()
    autoplay.add_argument(
        "--autoplay",
        dest="autoplay",
        action="store_true",
        default=None,
        help="simulated players bet and decide (default on a simulated table)",
    )
    autoplay.add_argument("--no-autoplay", dest="autoplay", action="store_false")
    panel = parser.add_mutually_exclusive_group()
    panel.add_argument(
        "--panel",
        default=None,
        metavar="HOST:PORT",
        help="where the floor panel listens (default: the configuration's [panel] bind, 127.0.0.1:8080)",
    )
    panel.add_argument("--no-panel", action="store_true", help="no panel")


def _add_log_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--log-level",
        choices=("debug", "info", "warning", "error"),
        default=None,
        help="override the configuration's log level",
    )
    parser.add_argument(
        "--log-file",
        type=Path,
        default=None,
        metavar="PATH",
        help="append the log to PATH (JSON lines under format auto) instead of standard error, so the "
        "terminal shows the rounds alone (make run: var/flushtable.log)",
    )


def _add_check_and_simulation_options(parser: argparse.ArgumentParser) -> None:
    """The integrity check's cadence, and the options of a simulated or development run."""
    parser.add_argument(
        "--time-scale",
        type=float,
        default=1.0,
        help="run the table clock this many times faster, and deal instantly (simulation only)",
    )
    parser.add_argument(
        "--integrity-every",
        type=int,
        default=DEFAULT_EVERY_ROUNDS,
        metavar="N",
        help=f"check the cards' randomness every N closed rounds; 0: never (default {DEFAULT_EVERY_ROUNDS})",
    )
    parser.add_argument(
        "--scenario",
        type=Path,
        default=None,
        help="play a scenario file (TOML, docs/devices.md) on the simulated devices (simulation only)",
    )
    parser.add_argument(
        "--sim-supervisor-clear-after",
        type=float,
        default=None,
        metavar="SECONDS",
        help="a simulated supervisor clears each latched fault after SECONDS (simulation only; soak tests)",
    )
    parser.add_argument(
        "--dev-release",
        type=Path,
        default=None,
        metavar="DIR",
        help="sign a development release of this checkout with a key kept in DIR and verify against it "
        "(make run: var/release); refused when the configuration has [software]",
    )
    parser.add_argument(
        "--sim-walk-away-rate",
        type=float,
        default=0.0,
        metavar="RATE",
        help="how often (0 to 1) a simulated player walks away from a decision; default 0 (simulation only)",
    )


def _check_bindable(host: str, port: int, field: str) -> None:
    """Refuse a panel address that cannot be listened on before the journal is touched: a start that
    fails must journal nothing (issue 14). The daemon binds it again later; this catches the usual case
    (another process holds the port, or no such address here), not a race."""
    if port == 0:
        return
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        family, kind, proto, _, address = infos[0]
        with socket.socket(family, kind, proto) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind(address)
    except OSError as error:
        raise UserError(f"{field} {host}:{port}: cannot listen there: {error.strerror or error}") from None


def panel_address(args: argparse.Namespace, config: TableConfig) -> tuple[str, int] | None:
    """Where the panel listens: --panel when given, else the configuration's [panel] bind (issue 30
    item 5: the bind was echoed by `flushtable config` and ignored by `run`); None with --no-panel."""
    if args.no_panel:
        return None
    if args.panel is None:
        return config.panel.host, config.panel.port
    from controller.panel.server import parse_bind  # noqa: PLC0415 - the web stack loads only when wanted

    return parse_bind(args.panel)


def check_journal_path(args: argparse.Namespace, config: TableConfig) -> None:
    """The journal's path refused in one line before anything starts when no journal can be written
    there: a path through a file, a directory, a device, a directory that takes no files (/proc)."""
    if args.journal is not None:
        check_database_file(args.journal, "--journal", must_exist=False)
    else:
        check_database_file(config.journal_path, f"{config.source}: journal.path", must_exist=False)


def run(args: argparse.Namespace) -> int:
    if args.rounds is not None and args.rounds < 1:
        raise UserError(f"--rounds: must be at least 1, not {args.rounds}")
    if args.integrity_every < 0:
        raise UserError(f"--integrity-every: must be 0 (never) or more, not {args.integrity_every}")
    if not args.time_scale > 0:
        raise UserError(f"--time-scale: must be positive, not {args.time_scale}")
    config = load_config(args.config)
    if args.log_file is None:
        configure_logging_for(args.log_level or config.logging.level, config.logging.format)
        return _run(args, config)
    try:
        args.log_file.parent.mkdir(parents=True, exist_ok=True)
        check_writable_file(args.log_file, "--log-file")  # a FIFO or a device would block or swallow it
        log_file = args.log_file.open("a", encoding="utf-8", buffering=1)  # a line reaches the file whole
    except OSError as error:
        raise UserError(f"--log-file: cannot append to {args.log_file}: {error.strerror or error}") from None
    with log_file:
        configure_logging_for(args.log_level or config.logging.level, config.logging.format, log_file)
        try:
            return _run(args, config)
        finally:
            configure_logging_for(args.log_level or config.logging.level, config.logging.format)


def verify_software(args: argparse.Namespace, config: TableConfig) -> VerifiedRelease | None:
    """The start's software verification, before anything is opened or appended (docs/operations.md
    "Software verification"). controller/cli.py made it before this module was imported
    (``args.software_verified``); it is made here only when that could not read the configuration's
    [software] (then already refused by the configuration's check) or for a caller that bypassed the
    command line."""
    early: VerifiedRelease | None = getattr(args, "software_verified", None)
    if early is not None:
        return early
    from controller.software import verify_before_import  # noqa: PLC0415

    words = [] if args.config is None else ["--config", str(args.config)]
    if args.dev_release is not None:
        words += ["--dev-release", str(args.dev_release)]
    verified = verify_before_import(words)
    if verified is None and config.software is not None:
        raise UserError(f"{config.source}: [software] could not be read before the start")
    return verified


def _run(args: argparse.Namespace, config: TableConfig) -> int:
    software = verify_software(args, config)
    check_journal_path(args, config)
    panel_bind = panel_address(args, config)
    if panel_bind is not None:
        _check_bindable(*panel_bind, "--panel" if args.panel is not None else f"{config.source}: panel.bind")
    simulated = all(device.simulated for device in config.devices.values())
    if args.time_scale != 1.0 and not simulated:
        raise UserError("--time-scale: only a fully simulated table runs on an accelerated clock")
    # Scripted devices and an automatic supervisor exist only on a simulated table.
    if args.scenario is not None and not simulated:
        raise UserError("--scenario: only a fully simulated table plays a scenario")
    clear_after_s = args.sim_supervisor_clear_after
    if clear_after_s is not None and not simulated:
        raise UserError("--sim-supervisor-clear-after: only on a fully simulated table")
    if clear_after_s is not None and not clear_after_s >= 0:
        raise UserError(f"--sim-supervisor-clear-after: must be 0 or more seconds, not {clear_after_s}")
    if not 0 <= args.sim_walk_away_rate <= 1:
        raise UserError(f"--sim-walk-away-rate: must be from 0 to 1, not {args.sim_walk_away_rate}")
    if args.sim_walk_away_rate and not simulated:
        raise UserError("--sim-walk-away-rate: only a fully simulated table has simulated players")
    if args.seed is not None and not any_simulated(config):
        raise UserError("--seed: only a simulated table has shuffles and players to seed")
    options = RunOptions(
        # Against the working directory now: the simulated devices' links are made beside the journal
        # and a relative path there is no device URL (issue 14: `--journal j.sqlite` failed).
        journal_path=args.journal.absolute() if args.journal is not None else None,
        rounds=args.rounds,
        panel_bind=panel_bind,
        integrity_every_rounds=args.integrity_every,
        new_journal=args.new_journal,
        software=software,
    )
    if not any_simulated(config):
        if args.autoplay:
            raise UserError("--autoplay: only a fully simulated table has simulated players")
        return asyncio.run(TableDaemon(config, options).run())
    simulation = SimulationOptions(
        seed=args.seed,
        autoplay=args.autoplay,
        time_scale=args.time_scale,
        scenario_path=args.scenario,
        supervisor_clear_after_s=clear_after_s,
        walk_away_rate=args.sim_walk_away_rate,
    )
    return asyncio.run(SimulatedTable(config, options, simulation).run())
