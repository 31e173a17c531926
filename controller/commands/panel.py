"""`flushtable panel --journal PATH [--panel HOST:PORT]`: the floor panel over a journal, read-only.

For a back office or a second screen: it follows the journal file as the daemon appends to it, shows
everything the daemon's own panel shows, and refuses operator actions (no engine is connected; those
go through `flushtable run --panel`).
"""

from __future__ import annotations

import argparse
import asyncio
import signal
from pathlib import Path

from controller.config import load_config
from controller.journal import Journal
from controller.locale import DEFAULT_PROPERTY
from controller.panel.embed import start_panel

NAME = "panel"
DEFAULT_BIND = "127.0.0.1:8080"
HELP = "serve the floor panel over a journal file, read-only (the daemon serves its own with run --panel)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--journal", type=Path, default=Path("var/journal.sqlite"), help="the table's journal file"
    )
    parser.add_argument(
        "--panel",
        default=None,
        metavar="HOST:PORT",
        help="where to listen (default: the configuration's [panel] bind, else 127.0.0.1:8080)",
    )
    parser.add_argument(
        "--config",
        type=Path,
        default=None,
        help="the table configuration, for its [panel] users, users_file and trusted_proxies",
    )
    parser.add_argument(
        "--users-file",
        type=Path,
        default=None,
        help="panel users (default $FLUSHTABLE_USERS_FILE, else the configuration's [panel] users_file, "
        "else panel-users.json beside the journal)",
    )


async def _serve(args: argparse.Namespace) -> int:
    journal = Journal.open_existing(args.journal, readonly=True)  # it writes nothing (docs/panel.md)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    # The users file by the one rule (controller.panel.auth.users_file_for), as the daemon finds it.
    config = load_config(args.config) if args.config else None
    panel_config = config.panel if config else None
    # --panel when given, else the configuration's [panel] bind (as `run` does: issue 30 item 5).
    bind = args.panel or (f"{panel_config.host}:{panel_config.port}" if panel_config else DEFAULT_BIND)
    panel = await start_panel(
        journal,
        bind=bind,
        users_file=args.users_file,
        panel_config=panel_config,
        read_only=True,
        property_settings=config.property_settings if config else DEFAULT_PROPERTY,
    )
    print(f"panel: {panel.url} (read-only over {args.journal}); Ctrl-C stops it", flush=True)
    try:
        await stop.wait()
    finally:
        await panel.stop()
        journal.close()
    return 0


def run(args: argparse.Namespace) -> int:
    return asyncio.run(_serve(args))
