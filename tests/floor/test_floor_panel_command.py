"""`flushtable floor panel --config` and `flushtable floor user add/list/disable` as an operator runs them:
real child processes, the panel served on a real port over a real PostgreSQL (tests/floor/conftest.py),
reached by HTTP and in real headless Chromium. A manager made by `floor user add` logs in and
acknowledges an alert, then two ticked at once, then all the page listed (not one raised since);
`floor user disable` ends their session in the open browser and refuses their next login; a viewer
changes nothing; SIGTERM stops the panel cleanly. Bad input: one line, exit 2."""

from __future__ import annotations

import io
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import psycopg
import pytest

from controller.cli import main
from controller.floor.config import load_floor_panel_config, write_floor_config
from controller.simulation.floor.embedded import EmbeddedFloor
from controller.simulation.floor.servers import free_port
from tests.chromium import CHROMIUM, launch_chromium
from tests.floor.conftest import EXPECT_TIMEOUT_MS, MakeFloor

ENV = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
START_BOUND_S = 60.0  # the panel answering after its start, on a loaded 2-core machine
STOP_BOUND_S = 30.0


def _flushtable(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "controller.cli", *args],
        input=stdin, capture_output=True, text=True, timeout=120, env=ENV, check=False,
    )  # fmt: skip


class Cli:
    """`flushtable` in this process (controller.cli.main, its standard input given): the same code as
    the child processes above, without a child's start-up (seconds each on a loaded machine)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
        self.monkeypatch, self.capsys = monkeypatch, capsys

    def __call__(self, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
        self.capsys.readouterr()
        self.monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
        code = main(list(args))
        captured = self.capsys.readouterr()
        return subprocess.CompletedProcess(list(args), code, captured.out, captured.err)


@pytest.fixture
def cli(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Cli:
    return Cli(monkeypatch, capsys)


def _one_line_refusal(result: subprocess.CompletedProcess[str], *expected: str) -> None:
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    assert result.stderr.count("\n") == 1, result.stderr
    for text in expected:
        assert text in result.stderr, result.stderr


def test_floor_user_add_list_disable_in_real_processes(tmp_path: Path, cli: Cli) -> None:
    config = tmp_path / "floor.toml"
    config.write_text('[floor]\nservers = ["tls://x:4222"]\n\n[panel]\nreporting_dsn_file = "r.dsn"\n')
    users_file = tmp_path / "floor-users.json"  # beside the floor's file: [panel] users_file's default
    added = _flushtable("floor", "user", "--config", str(config), "add", "mona", "--role", "manager",
                        stdin="manager-password\n")  # fmt: skip
    assert added.returncode == 0, added.stderr
    assert f"user mona (manager) saved in {users_file}" in added.stderr
    assert users_file.stat().st_mode & 0o777 == 0o600
    assert "manager-password" not in users_file.read_text()  # a scrypt hash only
    viewer = _flushtable("floor", "user", "--users-file", str(users_file), "add", "vic", "--role", "viewer",
                         stdin="viewer-password\n")  # fmt: skip
    assert viewer.returncode == 0, viewer.stderr
    listed = _flushtable("floor", "user", "--config", str(config), "list")
    assert listed.stdout == "mona\tmanager\nvic\tviewer\n"
    disabled = _flushtable("floor", "user", "--config", str(config), "disable", "vic")
    assert disabled.returncode == 0, disabled.stderr
    assert _flushtable("floor", "user", "--config", str(config), "list").stdout == (
        "mona\tmanager\nvic\tviewer\tdisabled\n"
    )
    # --replace gives a new password and enables the login again. (In this process from here on.)
    again = cli("floor", "user", "--config", str(config), "add", "vic", "--role", "auditor",
                        "--replace", stdin="auditor-password\n")  # fmt: skip
    assert again.returncode == 0, again.stderr
    assert cli("floor", "user", "--config", str(config), "list").stdout == "mona\tmanager\nvic\tauditor\n"

    before = users_file.read_bytes()
    _one_line_refusal(
        cli("floor", "user", "--config", str(config), "add", "mona", "--role", "manager",
                    stdin="another-password\n"),
        "user 'mona' exists",
    )  # fmt: skip
    _one_line_refusal(
        cli("floor", "user", "--config", str(config), "add", "sam", "--role", "supervisor", stdin="short\n"),
        "password: at least 8 characters",
    )  # fmt: skip
    _one_line_refusal(
        cli("floor", "user", "--config", str(config), "disable", "nobody"), "no floor user 'nobody'"
    )
    # Never a password on the command line: there is no option for one.
    argv = _flushtable("floor", "user", "--config", str(config), "add", "sam", "--role", "supervisor",
                       "--password", "on-the-command-line")  # fmt: skip
    assert argv.returncode == 2
    assert "unrecognized arguments: --password" in argv.stderr
    with pytest.raises(SystemExit) as bad_role:
        cli("floor", "user", "--config", str(config), "add", "sam", "--role", "owner")
    assert bad_role.value.code == 2
    assert "invalid choice: 'owner'" in cli.capsys.readouterr().err
    assert users_file.read_bytes() == before  # nothing written by a refusal

    users_file.write_text("{not json")
    _one_line_refusal(cli("floor", "user", "--config", str(config), "list"), "not a floor user file")


def test_floor_panel_bad_configuration_is_one_line_exit_2(tmp_path: Path, cli: Cli) -> None:
    _one_line_refusal(cli("floor", "panel", "--config", str(tmp_path / "missing.toml")), "missing.toml")
    typo = tmp_path / "typo.toml"
    typo.write_text('[floor]\nservers = ["tls://x:4222"]\n[panel]\nprot = 8090\n')
    _one_line_refusal(cli("floor", "panel", "--config", str(typo)), "panel.prot: unknown key")
    no_panel = tmp_path / "no-panel.toml"  # a whole valid [floor], and no [panel]
    no_panel.write_text(
        '[floor]\nservers = ["tls://127.0.0.1:4222"]\nuser = "floor-reader"\npassword_file = "nats.pw"\n'
        'ca_file = "ca.pem"\ndsn_file = "writer.dsn"\n'
    )
    (tmp_path / "nats.pw").write_text("pw\n")
    (tmp_path / "ca.pem").write_text("-----BEGIN CERTIFICATE-----\n")
    (tmp_path / "writer.dsn").write_text("host=127.0.0.1 dbname=floor\n")
    _one_line_refusal(cli("floor", "panel", "--config", str(no_panel)), "panel: missing")
    with_panel = tmp_path / "with-panel.toml"
    with_panel.write_text(no_panel.read_text() + '[panel]\nport = 0\nreporting_dsn_file = "nowhere.dsn"\n')
    _one_line_refusal(cli("floor", "panel", "--config", str(with_panel)), "panel.port: ")
    with_panel.write_text(no_panel.read_text() + '[panel]\nreporting_dsn_file = "nowhere.dsn"\n')
    _one_line_refusal(cli("floor", "panel", "--config", str(with_panel)), "panel.reporting_dsn_file: ")


def _raise_alert(connection: psycopg.Connection[tuple[object, ...]], message: str) -> None:
    connection.execute(
        "INSERT INTO floor_alerts (table_id, origin, kind, message) "
        "VALUES ('T1', 'table', 'device_fault', %s)",
        (message,),
    )


@pytest.fixture
def served(tmp_path: Path, make_floor: MakeFloor, cli: Cli) -> Iterator[tuple[EmbeddedFloor, Path, str, Cli]]:
    """A floor (real nats-server and PostgreSQL), its file with [panel], and `flushtable floor panel`
    running on it as a child process; stopped by SIGTERM at the end, which must end it cleanly."""
    floor = make_floor(["T1"])
    port = free_port()
    config = write_floor_config(tmp_path / "floor", floor.floor_config(), reporting_dsn=floor.reporting_dsn,
                                panel_port=port)  # fmt: skip
    for name, role, password in (
        ("mona", "manager", "manager-password"),
        ("vic", "viewer", "viewer-password"),
    ):
        added = cli(
            "floor", "user", "--config", str(config), "add", name, "--role", role, stdin=password + "\n"
        )
        assert added.returncode == 0, added.stderr
    with psycopg.connect(floor.owner_dsn) as connection:
        for number in range(4):  # alerts 1 to 4
            _raise_alert(connection, "shoe: red light" if number == 0 else f"sensor {number}: no reading")
    log = (tmp_path / "panel.err").open("w+")
    process = subprocess.Popen(
        [sys.executable, "-m", "controller.cli", "floor", "panel", "--config", str(config)],
        stdout=subprocess.DEVNULL, stderr=log, env=ENV,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + START_BOUND_S
        while True:  # a bounded wait for the panel to answer
            assert process.poll() is None, Path(log.name).read_text()
            try:
                if httpx.get(f"{url}/login", timeout=5).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "the floor panel did not answer"
            time.sleep(0.1)
        yield floor, config, url, cli
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=STOP_BOUND_S) == 0
        err = Path(log.name).read_text()
        assert "Traceback" not in err
        assert f"floor panel: {url}/" in err
        assert err.rstrip().endswith("floor panel: stopped")
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=STOP_BOUND_S)
        log.close()


def _http_login(url: str, user: str, password: str) -> tuple[httpx.Client, httpx.Response]:
    client = httpx.Client(base_url=url, timeout=30)
    form = client.get("/login")
    token = re.search(r'name="csrf_token" value="([^"]+)"', form.text)
    assert token is not None
    answer = client.post("/login", data={"user": user, "password": password, "csrf_token": token.group(1)})
    return client, answer


def test_the_served_panel_over_http(served: tuple[EmbeddedFloor, Path, str, Cli]) -> None:
    _floor, config, url, cli = served
    assert load_floor_panel_config(config).users_file == config.parent / "floor-users.json"
    client, answer = _http_login(url, "vic", "viewer-password")
    assert answer.status_code == 303
    page = client.get("/")
    assert page.status_code == 200
    assert "Floor map" in page.text
    alerts = client.get("/alerts")
    assert "shoe: red light" in alerts.text
    assert "/alerts/1/acknowledge" not in alerts.text  # a viewer is offered no action
    csrf = re.search(r'name="csrf_token" value="([^"]+)"', alerts.text)  # the logout form's
    assert csrf is not None
    refused = client.post("/alerts/1/acknowledge", data={"csrf_token": csrf.group(1)})
    assert refused.status_code == 403
    assert "A viewer cannot acknowledge alerts." in refused.text
    bulk = client.post("/alerts/acknowledge", data={"csrf_token": csrf.group(1), "ack_2": "1"})
    assert bulk.status_code == 403
    assert 'id="bulk-ack"' not in alerts.text
    _wrong, wrong = _http_login(url, "vic", "not-the-password")
    assert wrong.status_code == 401
    # A user added while the panel runs logs in at once (the file is read as it changes).
    added = cli("floor", "user", "--config", str(config), "add", "sue", "--role", "supervisor",
                stdin="supervisor-password\n")  # fmt: skip
    assert added.returncode == 0, added.stderr
    assert _http_login(url, "sue", "supervisor-password")[1].status_code == 303
    # Disabled: the open session ends at its next request, and no new login.
    assert cli("floor", "user", "--config", str(config), "disable", "vic").returncode == 0
    ended = client.get("/", follow_redirects=False)
    assert ended.status_code == 303
    assert ended.headers["location"] == "/login"
    assert _http_login(url, "vic", "viewer-password")[1].status_code == 401


@pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="Debian's chromium is not installed")
def test_a_manager_made_by_floor_user_add_acknowledges_in_chromium(
    served: tuple[EmbeddedFloor, Path, str, Cli],
) -> None:
    from playwright.sync_api import expect, sync_playwright

    floor, config, url, cli = served
    expect.set_options(timeout=EXPECT_TIMEOUT_MS)
    with sync_playwright() as playwright:
        browser = launch_chromium(playwright)
        context = browser.new_context(base_url=url, viewport={"width": 1280, "height": 800})
        context.set_default_timeout(EXPECT_TIMEOUT_MS)
        page = context.new_page()
        page.goto("/login")
        page.fill("input[name=user]", "mona")
        page.fill("input[name=password]", "manager-password")
        page.click("button[type=submit]")
        expect(page.locator("h1")).to_have_text("Floor map")
        page.goto("/alerts")
        row = page.locator("#alerts tbody tr[data-alert='1']")
        expect(row).to_contain_text("shoe: red light")
        row.locator("button").click()
        expect(page.locator("#alerts tbody tr[data-alert='1']")).to_contain_text("acknowledged by mona")
        # Bulk: the two ticked; then "all open" acknowledges exactly the open ones the page listed, not
        # one raised after the page was drawn.
        page.check("#alerts input[name=ack_2]")
        page.check("#alerts input[name=ack_3]")
        page.click("#ack-selected")
        expect(page.locator("#release-message")).to_have_text("Acknowledged 2 alerts as mona.")
        expect(page.locator("#ack-all")).to_have_text("Acknowledge all 1 open")
        with psycopg.connect(floor.owner_dsn) as connection:
            _raise_alert(connection, "raised after the page was drawn")  # alert 5
        page.click("#ack-all")
        expect(page.locator("#release-message")).to_have_text("Acknowledged 1 alert as mona.")
        with psycopg.connect(floor.reporting_dsn) as connection:
            rows = connection.execute("SELECT alert_id, acknowledged_by FROM floor_alerts ORDER BY alert_id")
            assert rows.fetchall() == [(1, "mona"), (2, "mona"), (3, "mona"), (4, "mona"), (5, None)]
        # The manager's login disabled from the command line: the open tab's next page is the login.
        assert cli("floor", "user", "--config", str(config), "disable", "mona").returncode == 0
        page.goto("/alerts")
        expect(page.locator("input[name=password]")).to_be_visible()
        page.fill("input[name=user]", "mona")
        page.fill("input[name=password]", "manager-password")
        page.click("button[type=submit]")
        expect(page.locator("p.error")).to_have_text("Wrong user name or password.")
        browser.close()
