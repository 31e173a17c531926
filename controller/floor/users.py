"""The floor panel's logins: ``floor-users.json`` beside the floor's file (docs/floor.md "Floor users").

Managed by `flushtable floor user add/list/disable` (controller/commands/floor_user.py), read by
`flushtable floor panel` (controller/commands/floor.py) on every request through :class:`FloorUserFile`,
so a user added, changed or disabled counts at once, without a restart, and a disabled user's sessions
end at their next request.

Why a file and not PostgreSQL: the panel reads PostgreSQL as the reporting role, which can change nothing,
and its writer connection exists only to acknowledge and release; a logins table would need a role that
may write it on every panel host. The file is the table panel's (controller/panel/auth.py): JSON written
atomically, mode 0600, scrypt hashes only, so a site manages both panels' logins the same way, and the
floor's logins still work while PostgreSQL is being restarted (the login page says the rest is down).
A disabled user stays in the file (their name stays taken, the record says who had a login) and can be
enabled again by ``user add NAME --replace``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from controller.errors import UserError
from controller.files import NO_SUCH_FILE, FileRefused, read_bounded, write_private_json
from controller.panel.auth import check_new_password, check_user_name, hash_password, parse_password_hash

FloorRole = Literal["viewer", "supervisor", "manager", "surveillance", "regulator", "auditor"]
FLOOR_ROLES: tuple[FloorRole, ...] = (
    "viewer",
    "supervisor",
    "manager",
    "surveillance",
    "regulator",
    "auditor",
)
FLOOR_USERS_FILE_NAME = "floor-users.json"
FILE_FORMAT = "flushtable-floor-users/1"
MAX_USERS_FILE_BYTES = 4 * 1024 * 1024


def parse_floor_role(text: object, *, field: str = "role") -> FloorRole:
    for role in FLOOR_ROLES:
        if text == role:
            return role
    raise UserError(f"{field}: {text!r} is not a floor role (expected one of {', '.join(FLOOR_ROLES)})")


@dataclass(frozen=True, slots=True)
class FloorUser:
    name: str
    role: FloorRole
    password_hash: str
    disabled: bool = False

    @classmethod
    def with_password(cls, name: str, role: FloorRole, password: str) -> FloorUser:
        return cls(name, role, hash_password(password))


def read_users(path: Path) -> dict[str, FloorUser]:
    """Every user of the file, disabled ones too; a missing file holds none."""
    try:  # a regular file only, bounded: a FIFO or a device named here is refused, never waited on
        raw = read_bounded(path, limit_bytes=MAX_USERS_FILE_BYTES)
    except FileRefused as refused:
        if refused.reason == NO_SUCH_FILE:
            return {}
        raise UserError(f"users file {refused}") from None
    try:
        document = json.loads(raw.decode("utf-8"))
        if document.get("format") != FILE_FORMAT:
            raise ValueError(f"format is not {FILE_FORMAT}")
        users: dict[str, FloorUser] = {}
        for entry in document["users"]:
            user = FloorUser(
                check_user_name(entry["name"]),
                parse_floor_role(entry["role"]),
                parse_password_hash(entry["password_hash"]),
                disabled=bool(entry.get("disabled", False)),
            )
            users[user.name] = user
    except (ValueError, KeyError, TypeError, AttributeError, UserError) as error:
        raise UserError(f"{path}: not a floor user file ({error})") from None
    return users


def write_users(path: Path, users: Mapping[str, FloorUser]) -> None:
    """Atomically, mode 0600 from the start (a reader sees the old file or the new one, never half)."""
    document = {
        "format": FILE_FORMAT,
        "users": [
            {
                "name": user.name,
                "role": user.role,
                "password_hash": user.password_hash,
                **({"disabled": True} if user.disabled else {}),
            }
            for user in sorted(users.values(), key=lambda u: u.name)
        ],
    }
    write_private_json(path, document, prefix=".floor-users-")


def add_user(path: Path, name: str, role: FloorRole, password: str, *, replace: bool = False) -> FloorUser:
    check_user_name(name)
    check_new_password(password)
    users = read_users(path)
    if name in users and not replace:
        raise UserError(f"name: user {name!r} exists (use --replace to set a new password or role)")
    user = FloorUser.with_password(name, role, password)  # --replace enables a disabled user again
    users[name] = user
    write_users(path, users)
    return user


def disable_user(path: Path, name: str) -> FloorUser:
    users = read_users(path)
    user = users.get(name)
    if user is None:
        raise UserError(f"name: no floor user {name!r} in {path}")
    disabled = FloorUser(user.name, user.role, user.password_hash, disabled=True)
    users[name] = disabled
    write_users(path, users)
    return disabled


class FloorUserFile(Mapping[str, FloorUser]):
    """The enabled users of the file, read again whenever the file changes (its size, time or inode):
    the running panel sees `floor user add/disable` at the next request. A file that became unreadable
    or malformed keeps the last good reading (a login never fails open) and is logged by the caller."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._stamp: tuple[int, int, int] | None = None
        self._users: dict[str, FloorUser] = {}
        self.error = ""  # the last reading's refusal, "" when it was read
        self.refresh()

    def refresh(self) -> None:
        try:
            status = os.stat(self.path)
            stamp: tuple[int, int, int] | None = (status.st_mtime_ns, status.st_size, status.st_ino)
        except FileNotFoundError:
            stamp = None
        if stamp == self._stamp and self._stamp is not None:
            return
        try:
            users = read_users(self.path)
        except UserError as error:
            self.error = str(error)
            return
        self.error = ""
        self._stamp = stamp
        self._users = {name: user for name, user in users.items() if not user.disabled}

    def __getitem__(self, name: str) -> FloorUser:
        self.refresh()
        return self._users[name]

    def __iter__(self) -> Iterator[str]:
        self.refresh()
        return iter(dict(self._users))

    def __len__(self) -> int:
        self.refresh()
        return len(self._users)
