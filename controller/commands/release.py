"""`flushtable release`: the maker's release manifest, its Ed25519 signature, and a development release
for the checkout (docs/operations.md "Software verification").

flushtable release keygen KEYFILE               a new signing key; prints the public key for [software]
flushtable release manifest [--out FILE]        the manifest of the installation that runs this command
flushtable release sign MANIFEST --key KEYFILE  the signed manifest the tables verify at every start
flushtable release dev DIR                      `make run`: a development key kept in DIR, a signed
                                                development manifest of the checkout beside it
flushtable release verify --config table.toml   what the table checks at start, without starting
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from controller import __version__
from controller.errors import UserError

NAME = "release"
HELP = "the signed release manifest the table verifies at every start (keygen, manifest, sign, dev, verify)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="release_command", metavar="ACTION", required=True)
    keygen = sub.add_parser("keygen", help="write a new Ed25519 signing key (PEM) and print its public key")
    keygen.add_argument("key", type=Path, metavar="KEYFILE")
    manifest = sub.add_parser("manifest", help="print (or write) the manifest of this installation")
    manifest.add_argument("--out", type=Path, default=None)
    manifest.add_argument("--development", action="store_true", help="mark it a development release")
    sign = sub.add_parser("sign", help="sign a manifest with the maker's key")
    sign.add_argument("manifest", type=Path, metavar="MANIFEST")
    sign.add_argument("--key", type=Path, required=True, metavar="KEYFILE")
    sign.add_argument("--out", type=Path, default=None, help="default: standard output")
    dev = sub.add_parser("dev", help="a signed development release of this checkout, its key kept in DIR")
    dev.add_argument("directory", type=Path, metavar="DIR")
    verify = sub.add_parser("verify", help="check this installation against the configured release")
    verify.add_argument("--config", type=Path, default=None, help="the table's TOML configuration")


def _write(text: str, out: Path | None) -> None:
    if out is None:
        sys.stdout.write(text)
        return
    from controller.files import check_writable_file  # noqa: PLC0415

    check_writable_file(out, "--out")  # never over a device, a FIFO or a directory
    out.parent.mkdir(parents=True, exist_ok=True)
    temporary = out.with_name(out.name + ".tmp")
    temporary.write_text(text, encoding="utf-8")
    temporary.replace(out)


def run(args: argparse.Namespace) -> int:
    from controller import software  # noqa: PLC0415 - cryptography loads only for this command

    command = args.release_command
    if command == "keygen":
        public = software.generate_key(args.key)
        print(
            f'public_key = "{public}"  # for the table\'s [software] section; '
            f"key id {software.key_id(bytes.fromhex(public))}"
        )
        return 0
    if command == "manifest":
        manifest = software.build_manifest(
            software.product_root(), release=__version__, development=args.development
        )
        _write(json.dumps(manifest, indent=1, sort_keys=True) + "\n", args.out)
        return 0
    if command == "sign":
        from controller.files import FileRefused, read_bounded_text  # noqa: PLC0415

        try:
            manifest = json.loads(read_bounded_text(args.manifest, limit_bytes=software.MAX_MANIFEST_BYTES))
        except FileRefused as refused:
            raise UserError(f"{refused} (the manifest)") from None
        except ValueError:
            raise UserError(f"{args.manifest}: not JSON") from None
        if not isinstance(manifest, dict) or manifest.get("format") != software.MANIFEST_FORMAT:
            raise UserError(f"{args.manifest}: not a release manifest ({software.MANIFEST_FORMAT})")
        signed = software.sign_manifest(manifest, software.load_private_key(args.key))
        _write(json.dumps(signed, indent=1, sort_keys=True) + "\n", args.out)
        if args.out is not None:
            print(
                f"signed {args.out}: release {manifest.get('release')}, "
                f"digest {software.release_digest(manifest)}"
            )
        return 0
    if command == "dev":
        return _dev(args.directory)
    return _verify(args)


def _dev(directory: Path) -> int:
    from controller.software import DEV_KEY, make_dev_release  # noqa: PLC0415

    out, public = make_dev_release(directory)
    print(f"development release signed: {out} (key {directory / DEV_KEY}, public key {public})")
    return 0


def _verify(args: argparse.Namespace) -> int:
    from controller.config import load_config  # noqa: PLC0415
    from controller.software import verify_release  # noqa: PLC0415

    config = load_config(args.config)
    if config.software is None:
        raise UserError(f"{config.source}: no [software] section: nothing to verify against")
    verified = verify_release(
        config.software.manifest,
        config.software.public_key,
        allow_development=config.software.allow_development,
    )
    print(json.dumps(verified.to_json(), indent=1))
    return 0
