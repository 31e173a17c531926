"""`flushtable config`: validate a table configuration and print the effective one."""

from __future__ import annotations

import argparse
import json

from controller.config import DEFAULT_CONFIG_TOML, load_config

NAME = "config"
HELP = "validate a table configuration (or show the embedded default) and print it"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", metavar="FILE", help="the file to check (default: the embedded default)")
    parser.add_argument("--default-toml", action="store_true", help="print the embedded default's TOML")


def run(args: argparse.Namespace) -> int:
    if args.default_toml:
        print(DEFAULT_CONFIG_TOML, end="")
        return 0
    config = load_config(args.config)
    shown = {"ok": True, "source": config.source, "digest": config.digest, "config": config.to_json()}
    if config.uplink is not None:  # beside the configuration: not part of its digest (docs/configuration.md)
        shown["uplink"] = config.uplink.to_json()
    if config.software is not None:  # the release verified at start: beside the configuration too
        shown["software"] = config.software.to_json()
    print(json.dumps(shown, indent=2))
    return 0
