"""`flushtable demo`: deal and settle one round of each game and print it readably."""

from __future__ import annotations

import argparse

NAME = "demo"
HELP = "deal and settle a round of each game with simulated players, and print them"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--seed", type=int, default=None, help="shuffle seed, for a reproducible demo")


def run(args: argparse.Namespace) -> int:
    raise NotImplementedError("the rules engine lands next")
