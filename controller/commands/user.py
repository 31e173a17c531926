"""`flushtable user add NAME --role ROLE`: a panel login, its password from standard input or a prompt.

The password is stored only as a scrypt hash (controller.panel.auth) in the user file, by default
var/panel-users.json (FLUSHTABLE_USERS_FILE or --users-file elsewhere); see docs/panel.md.
"""

from __future__ import annotations

import argparse
import getpass
import os
import sys
from pathlib import Path

from controller.errors import UserError
from controller.panel.auth import DEFAULT_USERS_FILE, ROLES, UserStore, parse_role

NAME = "user"
HELP = "manage the floor panel's logins (user add NAME --role ROLE; user list)"
USERS_FILE_ENV = "FLUSHTABLE_USERS_FILE"


def default_users_file() -> Path:
    return Path(os.environ.get(USERS_FILE_ENV) or DEFAULT_USERS_FILE)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--users-file", type=Path, default=None, help=f"default ${USERS_FILE_ENV} or {DEFAULT_USERS_FILE}"
    )
    actions = parser.add_subparsers(dest="user_action", metavar="ACTION", required=True)
    add = actions.add_parser(
        "add", help="add a user (or --replace one); the password comes from stdin or a prompt"
    )
    add.add_argument("name")
    add.add_argument("--role", required=True, choices=ROLES)
    add.add_argument(
        "--replace", action="store_true", help="set a new password and role for an existing user"
    )
    actions.add_parser("list", help="list users and roles (never their hashes)")


def _read_password() -> str:
    if sys.stdin is not None and sys.stdin.isatty():
        first = getpass.getpass("Password: ")
        if getpass.getpass("Again: ") != first:
            raise UserError("password: the two entries differ")
        return first
    line = sys.stdin.readline() if sys.stdin is not None else ""
    return line.rstrip("\r\n")


def run(args: argparse.Namespace) -> int:
    store = UserStore(args.users_file or default_users_file())
    if args.user_action == "list":
        for user in sorted(store.users().values(), key=lambda u: u.name):
            print(f"{user.name}\t{user.role}")
        return 0
    role = parse_role(args.role)
    password = _read_password()
    if not password:
        raise UserError("password: empty (give it on standard input or at the prompt)")
    user = store.add(args.name, role, password, replace=args.replace)
    print(f"user {user.name} ({user.role}) saved in {store.path}", file=sys.stderr)
    return 0
