"""Panel users, password hashes, sessions, CSRF tokens and the failed-login budgets.

Pure bookkeeping with an injected clock: no HTTP here (controller.panel.app does that), so every rule
is tested without a server.

Password hashes are controller.passwords' scrypt strings (hashlib.scrypt, a random 16-byte salt,
N=2**14, r=8, p=1, a 32-byte key: about 16 MiB and a few tens of milliseconds per check, so a stolen
user file is slow to attack and a login is still instant), the same form the configuration's
``[[panel.users]] password_hash`` holds. The parameters travel with each hash.

The user file (where :func:`users_file_for` says: $FLUSHTABLE_USERS_FILE, the configuration's
``[panel] users_file``, or panel-users.json beside the journal; docs/panel.md) is JSON written
atomically with mode 0600.
"""

from __future__ import annotations

import functools
import json
import os
import secrets
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, Literal, TypeAlias, TypeVar

from starlette.requests import Request
from starlette.responses import Response

from controller import passwords
from controller.errors import UserError
from controller.files import write_private_json

Role = Literal["viewer", "supervisor", "manager"]
ROLES: tuple[Role, ...] = ("viewer", "supervisor", "manager")
ROLE_RANK: dict[str, int] = {"viewer": 0, "supervisor": 1, "manager": 2}

MIN_PASSWORD_CHARS = 8
MAX_PASSWORD_CHARS = 1024
USER_NAME_MAX_CHARS = 64
BOOTSTRAP_USER = "supervisor"
BOOTSTRAP_PASSWORD_ENV = "FLUSHTABLE_SUPERVISOR_PASSWORD"
USERS_FILE_ENV = "FLUSHTABLE_USERS_FILE"
USERS_FILE_NAME = "panel-users.json"

Clock = Callable[[], float]


def role_allows(role: str, needed: Role) -> bool:
    """True when ``role`` carries at least the authority of ``needed``."""
    return ROLE_RANK.get(role, -1) >= ROLE_RANK[needed]


def parse_role(text: object, *, field: str = "role") -> Role:
    for role in ROLES:
        if text == role:
            return role
    raise UserError(f"{field}: {text!r} is not a role (expected one of {', '.join(ROLES)})")


def check_user_name(name: object, *, field: str = "name") -> str:
    if not isinstance(name, str) or not name:
        raise UserError(f"{field}: a user name is required")
    if len(name) > USER_NAME_MAX_CHARS:
        raise UserError(f"{field}: longer than {USER_NAME_MAX_CHARS} characters")
    if not all(ch.isalnum() or ch in "._-" for ch in name):
        raise UserError(f"{field}: {name!r} may hold only letters, digits, '.', '_' and '-'")
    return name


def check_new_password(password: str, *, field: str = "password") -> str:
    if len(password) < MIN_PASSWORD_CHARS:
        raise UserError(f"{field}: at least {MIN_PASSWORD_CHARS} characters are required")
    if len(password) > MAX_PASSWORD_CHARS:
        raise UserError(f"{field}: longer than {MAX_PASSWORD_CHARS} characters")
    return password


def parse_password_hash(text: object, *, field: str = "password_hash") -> str:
    if not isinstance(text, str):
        raise UserError(f"{field}: expected a scrypt$N$r$p$SALT_HEX$KEY_HEX string")
    try:
        passwords.parse_password_hash(text)
    except ValueError as error:
        raise UserError(f"{field}: {error}") from None
    return text


def hash_password(password: str) -> str:
    return passwords.hash_password(password)


def verify_password(password: str, password_hash: str) -> bool:
    return passwords.check_password(password, password_hash)


@functools.cache
def _unknown_name_hash() -> str:
    """Checked against when the user name is unknown, so a wrong name costs the same time as a wrong
    password. Made at the first login, whatever the name (so the first unknown name is not the slower
    one), not at import: a scrypt hash costs tens of milliseconds and 16 MiB, and most processes that
    import this module (`flushtable user`, the floor's commands, a table nobody has logged in to yet)
    never check a password."""
    return hash_password(secrets.token_urlsafe(16))


@dataclass(frozen=True, slots=True)
class User:
    name: str
    role: Role
    password_hash: str
    origin: Literal["file", "config"] = "file"
    must_change_password: bool = False  # a one-time password: the first login must set a new one


class UserStore:
    """Users from the user file plus users from the table configuration (read-only)."""

    def __init__(
        self,
        path: Path,
        config_users: Iterable[User] = (),
        *,
        verify: Callable[[str, str], bool] = verify_password,
    ) -> None:
        self.path = path
        self._config_users = {user.name: user for user in config_users}
        # (password, hash) -> bool: controller.passwords' scrypt check; a test may count the checks.
        self.verify = verify

    @staticmethod
    def users_from_config(entries: Iterable[Mapping[str, Any]], *, field: str = "panel.users") -> list[User]:
        """Users from the configuration: ``[{name, role, password_hash}]`` (never a plain password)."""
        users = []
        for index, entry in enumerate(entries):
            where = f"{field}[{index}]"
            name = check_user_name(entry.get("name"), field=f"{where}.name")
            role = parse_role(entry.get("role"), field=f"{where}.role")
            password_hash = entry.get("password_hash")
            users.append(
                User(name, role, parse_password_hash(password_hash, field=f"{where}.password_hash"), "config")
            )
        return users

    def _load_file(self) -> dict[str, User]:
        try:
            raw = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return {}
        try:
            document = json.loads(raw)
            users = {}
            for entry in document["users"]:
                user = User(
                    check_user_name(entry["name"]),
                    parse_role(entry["role"]),
                    entry["password_hash"],
                    must_change_password=bool(entry.get("must_change_password", False)),
                )
                parse_password_hash(user.password_hash)
                users[user.name] = user
        except (ValueError, KeyError, TypeError, UserError) as error:
            raise UserError(f"{self.path}: not a panel user file ({error})") from None
        return users

    def users(self) -> dict[str, User]:
        merged = self._load_file()
        merged.update(self._config_users)  # the configuration wins: it is what the operator deployed
        return merged

    def get(self, name: str) -> User | None:
        return self.users().get(name)

    def add(
        self, name: str, role: Role, password: str, *, replace: bool = False, must_change: bool = False
    ) -> User:
        check_user_name(name)
        check_new_password(password)
        if name in self._config_users:
            raise UserError(f"name: {name!r} is defined in the table configuration; change it there")
        users = self._load_file()
        if name in users and not replace:
            raise UserError(f"name: user {name!r} exists (use --replace to set a new password or role)")
        user = User(name, role, hash_password(password), must_change_password=must_change)
        users[name] = user
        self._save(users.values())
        return user

    def _save(self, users: Iterable[User]) -> None:
        document = {
            "format": "flushtable-panel-users/1",
            "users": [
                {
                    "name": user.name,
                    "role": user.role,
                    "password_hash": user.password_hash,
                    **({"must_change_password": True} if user.must_change_password else {}),
                }
                for user in sorted(users, key=lambda u: u.name)
            ],
        }
        self.path.parent.mkdir(parents=True, exist_ok=True)
        write_private_json(self.path, document, prefix=".users-")

    def authenticate(self, name: str, password: str) -> User | None:
        unknown_name_hash = _unknown_name_hash()  # before the name is looked up: see its doc
        user = self.get(name)
        if user is None:
            self.verify(password, unknown_name_hash)
            return None
        return user if self.verify(password, user.password_hash) else None

    def ensure_bootstrap_user(self, environ: Mapping[str, str]) -> str | None:
        """No default password: with no supervisor or manager at all, create ``supervisor``.

        Its password comes from FLUSHTABLE_SUPERVISOR_PASSWORD, or is a random one-time password that
        is returned (for the caller to print once) and never stored in clear.
        """
        if any(role_allows(user.role, "supervisor") for user in self.users().values()):
            return None
        from_env = environ.get(BOOTSTRAP_PASSWORD_ENV)
        if from_env:
            check_new_password(from_env, field=BOOTSTRAP_PASSWORD_ENV)
            self.add(BOOTSTRAP_USER, "supervisor", from_env, replace=True)
            return None
        one_time = secrets.token_urlsafe(12)
        self.add(BOOTSTRAP_USER, "supervisor", one_time, replace=True, must_change=True)
        return one_time

    def change_password(self, name: str, current: str, new: str) -> User:
        """A user sets a new password (the current one proves it is them); clears a one-time flag."""
        user = self.get(name)
        if user is None or not self.verify(current, user.password_hash):
            raise UserError("current_password: wrong password")
        if user.origin == "config":
            raise UserError("name: this user is defined in the table configuration; change the hash there")
        check_new_password(new, field="new_password")
        if new == current:
            raise UserError("new_password: must differ from the current one")
        return self.add(name, user.role, new, replace=True)


RoleT = TypeVar("RoleT", bound=str)


@dataclass(slots=True)
class RoleSession(Generic[RoleT]):
    """One login's server-side session; ``RoleT`` is the app's own set of roles (the table panel's
    :data:`Role`, the floor panel's ``FloorRole``), so each app's role checks stay typed."""

    token: str
    user: str
    role: RoleT
    csrf_token: str
    created_s: float
    last_seen_s: float
    must_change_password: bool = False


@dataclass(slots=True)
class RoleSessionStore(Generic[RoleT]):
    """Server-side sessions keyed by a random token (the cookie holds only the token).

    A session ends ``idle_timeout_s`` after its last touch or ``absolute_timeout_s`` after its login,
    whichever comes first, or at :meth:`end`. A request the user made touches it; a background one
    (a live stream's tick, a page's poll) reads it with ``touch=False``, so an open tab alone never
    keeps a session alive."""

    clock: Clock = time.monotonic
    idle_timeout_s: float = 15 * 60
    absolute_timeout_s: float = 12 * 3600
    _sessions: dict[str, RoleSession[RoleT]] = field(default_factory=dict)

    def create(self, user: str, role: RoleT, *, must_change_password: bool) -> RoleSession[RoleT]:
        """A new session with a fresh random token and CSRF token (a login never reuses one).
        ``must_change_password`` has no default: each caller says it, so none drops the one-time
        password's rule by leaving it out."""
        now = self.clock()
        # The ended sessions nobody came back for (a tab closed, a user gone home) go at each login;
        # else they stayed in memory until the panel's restart.
        for token in [t for t, s in self._sessions.items() if self._expired(s, now)]:
            del self._sessions[token]
        session = RoleSession(
            token=secrets.token_urlsafe(32),
            user=user,
            role=role,
            csrf_token=secrets.token_urlsafe(32),
            created_s=now,
            last_seen_s=now,
            must_change_password=must_change_password,
        )
        self._sessions[session.token] = session
        return session

    def get(self, token: str | None, *, touch: bool = True) -> RoleSession[RoleT] | None:
        if not token:
            return None
        session = self._sessions.get(token)
        if session is None:
            return None
        now = self.clock()
        if self._expired(session, now):
            del self._sessions[token]
            return None
        if touch:
            session.last_seen_s = now
        return session

    def _expired(self, session: RoleSession[RoleT], now: float) -> bool:
        return (
            now - session.last_seen_s > self.idle_timeout_s
            or now - session.created_s > self.absolute_timeout_s
        )

    def __len__(self) -> int:
        """The sessions held (ended ones among them until a login sweeps them or a request meets them)."""
        return len(self._sessions)

    def end(self, token: str | None) -> None:
        if token:
            self._sessions.pop(token, None)

    def end_user(self, user: str) -> None:
        for token in [t for t, s in self._sessions.items() if s.user == user]:
            del self._sessions[token]


# The table panel's sessions: its three roles.
Session: TypeAlias = RoleSession[Role]
SessionStore: TypeAlias = RoleSessionStore[Role]


@dataclass(frozen=True, slots=True)
class LoginTicket:
    """One password check the budgets allowed; settled once with :meth:`LoginBudget.settle`."""

    keys: tuple[str, ...]


@dataclass(slots=True)
class LoginBudget:
    """Password checks per client address and per user name, taken *before* the check.

    Each key may have at most ``max_failures`` checks that failed within ``window_s`` or are still
    running; :meth:`take` counts a check as running the moment it is allowed (synchronously, so on the
    event loop no two requests can both take the last one), and :meth:`settle` turns it into a failure
    or, on success, clears the key. The failure that fills a key's budget locks it for ``lockout_s``.
    So at most ``max_failures`` checks run per key, concurrently or one after another, and a locked
    key is refused without a check."""

    clock: Clock = time.monotonic
    max_failures: int = 5
    window_s: float = 300.0
    lockout_s: float = 60.0
    _failures: dict[str, list[float]] = field(default_factory=dict)
    _running: dict[str, int] = field(default_factory=dict)
    _locked_until: dict[str, float] = field(default_factory=dict)

    def retry_after_s(self, keys: Iterable[str]) -> float:
        now = self.clock()
        waits = [until - now for key in keys if (until := self._locked_until.get(key, 0.0)) > now]
        return max(waits, default=0.0)

    def _recent(self, key: str, now: float) -> list[float]:
        recent = [t for t in self._failures.get(key, []) if now - t < self.window_s]
        if recent:
            self._failures[key] = recent
        else:
            self._failures.pop(key, None)
        return recent

    def take(self, keys: Iterable[str]) -> LoginTicket | float:
        """A ticket for one password check, or the seconds to wait before trying again."""
        keys = tuple(keys)
        wait_s = self.retry_after_s(keys)
        if wait_s > 0:
            return wait_s
        now = self.clock()
        for key in keys:
            if len(self._recent(key, now)) + self._running.get(key, 0) >= self.max_failures:
                # The budget is spent by checks still running: they settle within a second.
                return 1.0
        for key in keys:
            self._running[key] = self._running.get(key, 0) + 1
        self._forget_oldest()
        return LoginTicket(keys)

    def settle(self, ticket: LoginTicket, *, succeeded: bool) -> bool:
        """The check's outcome; True when this failure locked a key."""
        now = self.clock()
        locked = False
        for key in ticket.keys:
            running = self._running.get(key, 0) - 1
            if running > 0:
                self._running[key] = running
            else:
                self._running.pop(key, None)
            if succeeded:
                self._failures.pop(key, None)
                continue
            recent = self._recent(key, now)
            recent.append(now)
            self._failures[key] = recent
            if len(recent) >= self.max_failures:
                self._locked_until[key] = now + self.lockout_s
                del self._failures[key]
                locked = True
        return locked

    def _forget_oldest(self) -> None:
        """Bounded memory under a flood of made-up names: forget the oldest keys' failures and
        expired locks (never a running check's count, which a settle takes back)."""
        if len(self._failures) > 10_000:
            for key in list(self._failures)[:5_000]:
                del self._failures[key]
        if len(self._locked_until) > 10_000:
            now = self.clock()
            for key in [k for k, until in self._locked_until.items() if until <= now]:
                del self._locked_until[key]


def users_file_for(
    journal_path: Path, panel_config: object = None, environ: Mapping[str, str] | None = None
) -> Path:
    """Where the panel's users live, one rule for the daemon, `flushtable user` and `flushtable panel`:
    $FLUSHTABLE_USERS_FILE, else the configuration's ``[panel] users_file`` (``panel_config`` is the
    configuration's panel section), else panel-users.json beside the journal."""
    from_env = (os.environ if environ is None else environ).get(USERS_FILE_ENV)
    if from_env:
        return Path(from_env)
    configured = getattr(panel_config, "users_file", None)
    if configured:
        return Path(configured)
    return journal_path.parent / USERS_FILE_NAME


def set_cookie(response: Response, request: Request, name: str, value: str, max_age_s: int) -> None:
    """A panel's cookie (a session's token, a login form's CSRF token): the whole site, not readable by
    scripts, never sent by another site, ``Secure`` over HTTPS. The table's and the floor's panels."""
    response.set_cookie(
        name,
        value,
        max_age=max_age_s,
        path="/",
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
    )
