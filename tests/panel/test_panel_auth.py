"""Users, password hashes, the bootstrap supervisor, the login budgets and `flushtable user add`."""

from __future__ import annotations

import io
import json
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from controller.cli import main
from controller.errors import UserError
from controller.panel.auth import (
    BOOTSTRAP_PASSWORD_ENV,
    LoginBudget,
    LoginTicket,
    SessionStore,
    User,
    UserStore,
    hash_password,
    role_allows,
)
from controller.passwords import parse_password_hash
from tests.panel.conftest import FakeClock


def test_user_file_holds_scrypt_hashes_only_and_is_private(tmp_path: Path) -> None:
    store = UserStore(tmp_path / "var" / "panel-users.json")
    store.add("alice", "supervisor", "s3cret-words")
    raw = store.path.read_text()
    assert "s3cret-words" not in raw
    entry = json.loads(raw)["users"][0]
    parsed = parse_password_hash(entry["password_hash"])
    assert (parsed.n, parsed.r, parsed.p, len(parsed.salt)) == (2**14, 8, 1, 16)
    assert stat.S_IMODE(store.path.stat().st_mode) == 0o600
    assert store.authenticate("alice", "s3cret-words") is not None
    assert store.authenticate("alice", "s3cret-word") is None
    assert store.authenticate("nobody", "s3cret-words") is None
    # Same password, fresh salt each time.
    assert hash_password("s3cret-words") != hash_password("s3cret-words")


# In a fresh interpreter: hashlib.scrypt counted from before controller.panel.auth is imported, then a
# user file made (one hash), then the first login of the name in argv[1] ("-" for none): the count at
# each point, as JSON.
_SCRYPT_PROBE = """
import hashlib, json, sys, tempfile
from pathlib import Path
calls = []
real = hashlib.scrypt
hashlib.scrypt = lambda *args, **kwargs: calls.append(1) or real(*args, **kwargs)
from controller.panel.auth import UserStore
imported = len(calls)
store = UserStore(Path(tempfile.mkdtemp()) / "panel-users.json")
store.add("alice", "supervisor", "s3cret-words")
made = len(calls)
if sys.argv[1] != "-":
    store.authenticate(sys.argv[1], "not-the-password")
print(json.dumps([imported, made, len(calls)]))
"""


def _scrypt_calls(login_name: str) -> list[int]:
    done = subprocess.run(
        [sys.executable, "-c", _SCRYPT_PROBE, login_name],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return [int(count) for count in json.loads(done.stdout)]


def test_importing_the_users_module_derives_no_key_and_a_first_login_costs_the_same_for_any_name() -> None:
    """The unknown names' stand-in hash is made at the first login, not at import (a scrypt key: tens
    of milliseconds and 16 MiB in every process that imports the module, most of which never check a
    password); made before the name is looked up, so the first login of an unknown name derives as
    many keys as that of a known one (a wrong name costs the same time as a wrong password)."""
    imported, made, _ = _scrypt_calls("-")
    assert (imported, made) == (0, 1)
    assert _scrypt_calls("alice")[2] - made == _scrypt_calls("nobody")[2] - made == 2


def test_bad_users_are_refused_with_the_field_named(tmp_path: Path) -> None:
    store = UserStore(tmp_path / "u.json")
    with pytest.raises(UserError, match=r"^password: at least 8"):
        store.add("bob", "viewer", "short")
    with pytest.raises(UserError, match=r"^name: "):
        store.add("bob smith", "viewer", "long-enough")
    store.add("bob", "viewer", "long-enough")
    with pytest.raises(UserError, match="exists"):
        store.add("bob", "manager", "long-enough")
    store.add("bob", "manager", "long-enough-2", replace=True)
    assert store.users()["bob"].role == "manager"
    (tmp_path / "broken.json").write_text("{not json")
    with pytest.raises(UserError, match=r"broken\.json: not a panel user file"):
        UserStore(tmp_path / "broken.json").users()


def test_configuration_users_join_and_win(tmp_path: Path) -> None:
    config_user = User("carol", "manager", hash_password("from-config-1"), "config")
    store = UserStore(tmp_path / "u.json", [config_user])
    assert store.authenticate("carol", "from-config-1") is not None
    with pytest.raises(UserError, match="configuration"):
        store.add("carol", "viewer", "whatever-123")
    with pytest.raises(UserError, match=r"panel.users\[0\].password_hash"):
        UserStore.users_from_config([{"name": "dan", "role": "viewer", "password_hash": "plain"}])


def test_no_default_password_the_first_supervisor_comes_from_the_environment(tmp_path: Path) -> None:
    store = UserStore(tmp_path / "u.json")
    assert store.ensure_bootstrap_user({BOOTSTRAP_PASSWORD_ENV: "pit-boss-2026"}) is None
    assert store.authenticate("supervisor", "pit-boss-2026") is not None
    # Once there is a supervisor, nothing changes on later starts.
    assert store.ensure_bootstrap_user({BOOTSTRAP_PASSWORD_ENV: "another-one-1"}) is None
    assert store.authenticate("supervisor", "pit-boss-2026") is not None


def test_no_default_password_else_a_one_time_password_once(tmp_path: Path) -> None:
    store = UserStore(tmp_path / "u.json")
    one_time = store.ensure_bootstrap_user({})
    assert one_time is not None
    assert len(one_time) >= 12
    assert one_time not in store.path.read_text()
    assert store.authenticate("supervisor", one_time) is not None
    assert store.ensure_bootstrap_user({}) is None  # printed once: never again
    other = UserStore(tmp_path / "v.json")
    assert other.ensure_bootstrap_user({}) != one_time


def test_roles_are_ordered() -> None:
    assert role_allows("manager", "supervisor")
    assert role_allows("supervisor", "supervisor")
    assert not role_allows("viewer", "supervisor")
    assert not role_allows("supervisor", "manager")
    assert not role_allows("root", "viewer")


def _fail(budget: LoginBudget, keys: tuple[str, ...]) -> bool:
    ticket = budget.take(keys)
    assert isinstance(ticket, LoginTicket), ticket
    return budget.settle(ticket, succeeded=False)


def test_budget_locks_after_repeated_failures_and_forgets_in_time() -> None:
    clock = FakeClock()
    budget = LoginBudget(clock=clock, max_failures=3, window_s=60, lockout_s=30)
    keys = ("addr:10.0.0.1", "user:sam")
    assert not _fail(budget, keys)
    assert not _fail(budget, keys)
    assert _fail(budget, keys)
    assert budget.retry_after_s(keys) == 30
    assert budget.take(keys) == 30  # locked: no ticket, so no password check
    assert budget.retry_after_s(("addr:other", "user:other")) == 0
    clock.now_s += 31
    assert budget.retry_after_s(keys) == 0
    # Failures spread wider than the window never lock.
    for _ in range(5):
        clock.now_s += 61
        assert not _fail(budget, keys)


def test_session_store_sweeps_ended_sessions_at_each_login_and_asks_for_the_one_time_rule() -> None:
    clock = FakeClock()
    store = SessionStore(clock=clock, idle_timeout_s=60, absolute_timeout_s=3600)
    left = store.create("sam", "supervisor", must_change_password=False)
    kept = store.create("dan", "viewer", must_change_password=True)
    assert kept.must_change_password
    assert not left.must_change_password
    clock.now_s += 40
    assert store.get(kept.token) is kept  # touched: 60 s from here
    clock.now_s += 40  # sam's tab was closed 80 s ago: never asked for again
    assert len(store) == 2
    store.create("ann", "manager", must_change_password=False)
    assert len(store) == 2  # sam's ended session went with the login; dan's and ann's stay
    assert store.get(left.token, touch=False) is None
    assert store.get(kept.token, touch=False) is kept
    # No default for the one-time password's rule: a caller that leaves it out is refused.
    with pytest.raises(TypeError):
        store.create("eve", "viewer")  # type: ignore[call-arg]


def test_budget_counts_checks_still_running_so_a_burst_gets_no_more() -> None:
    budget = LoginBudget(clock=FakeClock(), max_failures=3, window_s=60, lockout_s=30)
    keys = ("addr:10.0.0.1", "user:sam")
    running = [budget.take(keys) for _ in range(3)]
    assert all(isinstance(ticket, LoginTicket) for ticket in running)
    assert budget.take(keys) == 1.0  # spent by the three in flight: the fourth is refused unchecked
    assert budget.take(("addr:10.0.0.2", "user:sam")) == 1.0  # the user's budget, from any address
    assert isinstance(budget.take(("addr:10.0.0.1", "user:max")), float)  # and the address's
    assert isinstance(budget.take(("addr:10.0.0.2", "user:max")), LoginTicket)
    first = running[0]
    assert isinstance(first, LoginTicket)
    budget.settle(first, succeeded=True)  # the right password: the keys' failures are forgotten
    assert isinstance(budget.take(keys), LoginTicket)


def test_user_add_command_reads_the_password_from_stdin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    users = tmp_path / "users.json"
    monkeypatch.setattr("sys.stdin", io.StringIO("floor-pass-77\n"))
    assert main(["user", "--users-file", str(users), "add", "erin", "--role", "supervisor"]) == 0
    assert UserStore(users).authenticate("erin", "floor-pass-77") is not None
    assert main(["user", "--users-file", str(users), "list"]) == 0
    assert "erin\tsupervisor" in capsys.readouterr().out
    monkeypatch.setattr("sys.stdin", io.StringIO("short\n"))
    assert main(["user", "--users-file", str(users), "add", "fay", "--role", "viewer"]) == 2
    assert capsys.readouterr().err.strip() == "flushtable user: password: at least 8 characters are required"
    monkeypatch.setattr("sys.stdin", io.StringIO(""))
    assert main(["user", "--users-file", str(users), "add", "fay", "--role", "viewer"]) == 2
    assert "password: empty" in capsys.readouterr().err
