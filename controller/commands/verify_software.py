"""`flushtable verify-software --seed HEX`: the seeded verification at the table (docs/operations.md
"Software verification"): HMAC-SHA256(seed, bytes) of every product file that runs here, and their
aggregate. The verifier chooses the seed, so an answer kept from before cannot be replayed."""

from __future__ import annotations

import argparse
import json

NAME = "verify-software"
HELP = "HMAC-SHA256 with a verifier's seed over every file of the product that runs here (--seed HEX)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--seed", required=True, metavar="HEX", help="the verifier's seed, 16 to 128 hex digits"
    )
    parser.add_argument("--verbose", action="store_true", help="every file's HMAC too")
    parser.add_argument("--json", action="store_true", help="as JSON")


def run(args: argparse.Namespace) -> int:
    from controller import software  # noqa: PLC0415

    seed = software.parse_seed(args.seed)
    result = software.seeded_digests_of_root(seed)
    if args.json:
        report: dict[str, object] = {
            "seed": args.seed.lower(),
            "aggregate": result.aggregate,
            "files": len(result.files),
        }
        if args.verbose:
            report["per_file"] = result.files
        print(json.dumps(report, indent=1))
        return 0
    if args.verbose:
        for name, digest in result.files.items():
            print(f"{digest}  {name}")
    print(f"aggregate HMAC-SHA256 over {len(result.files)} files: {result.aggregate}")
    return 0
