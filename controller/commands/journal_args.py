"""The journal's location for every command that reads or writes it: --journal, else --config's
journal.path, else the embedded default's (var/journal.sqlite)."""

from __future__ import annotations

import argparse
from pathlib import Path

from controller.config import load_config
from controller.files import check_database_file


def add_journal_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--journal", metavar="PATH", help="the journal file (default: the configuration's)")
    parser.add_argument(
        "--config", metavar="FILE", help="the table configuration (default: the embedded one)"
    )


def journal_path(args: argparse.Namespace) -> Path:
    """The journal to read, refused in one line unless it is an existing SQLite file (a FIFO, a device,
    a directory or a text file is never handed to SQLite: issue 30 item 4)."""
    if args.journal:
        path = Path(args.journal)
        check_database_file(path, "--journal", must_exist=True)
        return path
    config = load_config(args.config)
    check_database_file(config.journal_path, f"{config.source}: journal.path", must_exist=True)
    return config.journal_path
