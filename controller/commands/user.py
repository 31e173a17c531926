"""`flushtable user add NAME --role ROLE`: a panel login, its password from standard input or a prompt.

The password is stored only as a scrypt hash (controller.panel.auth) in the user file. Which file: the
one rule the daemon and `flushtable panel` follow too (controller.panel.auth.users_file_for) —
--users-file, else $FLUSHTABLE_USERS_FILE, else the configuration's ``[panel] users_file``, else
panel-users.json beside the journal (--journal, else the configuration's; by default
var/panel-users.json). See docs/panel.md.
"""

from __future__ import annotations

import argparse
import getpass
import os
import sys
from pathlib import Path

from controller.commands.journal_args import add_journal_arguments
from controller.errors import UserError
from controller.files import check_database_file, check_readable_file, check_writable_file
from controller.panel.auth import ROLES, USERS_FILE_ENV, UserStore, parse_role, users_file_for

NAME = "user"
HELP = "manage the floor panel's logins (user add NAME --role ROLE; user list)"


def users_file_of(args: argparse.Namespace) -> Path:
    """The user file for a command's arguments (--users-file, --journal, --config), by the one rule."""
    if args.users_file:
        return Path(args.users_file)
    if os.environ.get(USERS_FILE_ENV):
        return Path(os.environ[USERS_FILE_ENV])  # no configuration is read: it may not even exist here
    from controller.config import load_config  # noqa: PLC0415 - only when the file is not given

    config = load_config(args.config) if args.config or not args.journal else None
    journal = Path(args.journal) if args.journal else config.journal_path if config else Path()
    return users_file_for(journal, config.panel if config is not None else None)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--users-file",
        type=Path,
        default=None,
        help=f"default ${USERS_FILE_ENV}, else the configuration's [panel] users_file, "
        "else panel-users.json beside the journal",
    )
    add_journal_arguments(parser)
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


def read_password() -> str:
    """A password from a prompt (typed twice) or standard input's first line; never from argv."""
    if sys.stdin is not None and sys.stdin.isatty():
        first = getpass.getpass("Password: ")
        if getpass.getpass("Again: ") != first:
            raise UserError("password: the two entries differ")
        return first
    line = sys.stdin.readline() if sys.stdin is not None else ""
    return line.rstrip("\r\n")


def check_paths(args: argparse.Namespace, users_file: Path) -> None:
    """The journal named (which may not exist yet) and the users file, refused in one line before the
    file is read or written: a FIFO, a device, a directory, a path through a file (issue 30 item 4)."""
    if args.journal:
        check_database_file(args.journal, "--journal", must_exist=False)
    if args.user_action == "add":
        check_writable_file(users_file, "users file")
    elif users_file.exists():
        check_readable_file(users_file, "users file")
    elif not users_file.parent.is_dir():
        raise UserError(f"users file {users_file}: no such file, and no directory {users_file.parent}")


def run(args: argparse.Namespace) -> int:
    users_file = users_file_of(args)
    check_paths(args, users_file)
    store = UserStore(users_file)
    if args.user_action == "list":
        for user in sorted(store.users().values(), key=lambda u: u.name):
            print(f"{user.name}\t{user.role}")
        return 0
    role = parse_role(args.role)
    password = read_password()
    if not password:
        raise UserError("password: empty (give it on standard input or at the prompt)")
    user = store.add(args.name, role, password, replace=args.replace)
    print(f"user {user.name} ({user.role}) saved in {store.path}", file=sys.stderr)
    return 0
