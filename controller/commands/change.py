"""`flushtable change list|propose|approve|reject`: two-person control from the command line.

The running table's panel is the one way in (controller/panel/routes/changes.py): each manager logs in
with their own name and password (from standard input, or a prompt), so an approval is a second
person's, never a name typed after ``--by``. Every step is journaled by the table as on the panel
(docs/operations.md "Two-person control").

    flushtable change propose paytable --set wager=flush --set spec=hcf-flush-dp --user max --reason "..."
    flushtable change propose config_file --file new-table.toml --user max
    flushtable change approve CT1-0001 --user mia
    flushtable change list --user mia
"""

from __future__ import annotations

import argparse
import getpass
import hashlib
import http.cookiejar
import json
import sys
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

from controller.errors import UserError
from controller.files import FileRefused, read_bounded_text

NAME = "change"
HELP = "two-person control of the money settings: propose, approve, reject, list (via the table's panel)"
DEFAULT_PANEL = "http://127.0.0.1:8080"
TIMEOUT_S = 30.0
MAX_CONFIG_BYTES = 1 << 20


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--panel", default=DEFAULT_PANEL, metavar="URL", help=f"the table's panel (default {DEFAULT_PANEL})"
    )
    parser.add_argument(
        "--user", required=True, help="your panel login (a manager); the password from stdin or a prompt"
    )
    steps = parser.add_subparsers(dest="step", metavar="STEP", required=True)
    steps.add_parser("list", help="every proposal, pending first")
    propose = steps.add_parser(
        "propose", help="propose a change: nothing applies until a second manager approves"
    )
    propose.add_argument(
        "kind", help="limits, bonus_limit, paytable, config_file, ... (GET /api/changes/kinds)"
    )
    propose.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a parameter (repeatable); whole numbers are numbers",
    )
    propose.add_argument(
        "--params", metavar="JSON", help="the parameters as one JSON object (custom paytable lines)"
    )
    propose.add_argument(
        "--file", type=Path, help="config_file: the new configuration file (its sha256 is proposed)"
    )
    propose.add_argument("--reason", default="", help="why (journaled with your name)")
    approve = steps.add_parser(
        "approve", help="approve another manager's proposal: it applies now, between rounds"
    )
    approve.add_argument("change_id")
    reject = steps.add_parser("reject", help="reject a proposal (your own too): it never applies")
    reject.add_argument("change_id")
    reject.add_argument("--reason", required=True)


def _password() -> str:
    if sys.stdin is not None and sys.stdin.isatty():
        return getpass.getpass("Password: ")
    line = sys.stdin.readline() if sys.stdin is not None else ""
    return line.rstrip("\r\n")


def _params(args: argparse.Namespace) -> dict[str, Any]:
    params: dict[str, Any] = {}
    if args.params:
        try:
            loaded = json.loads(args.params)
        except json.JSONDecodeError as error:
            raise UserError(f"--params: not JSON: {error.msg}") from None
        if not isinstance(loaded, dict):
            raise UserError("--params: must be a JSON object")
        params.update(loaded)
    for item in args.set:
        key, equals, value = item.partition("=")
        if not equals or not key:
            raise UserError(f"--set: {item!r} is not KEY=VALUE")
        params[key] = int(value) if value.lstrip("-").isdigit() else value
    if args.file is not None:
        try:
            text = read_bounded_text(args.file, limit_bytes=MAX_CONFIG_BYTES)
        except FileRefused as refused:
            raise UserError(str(refused)) from None
        params["sha256"] = hashlib.sha256(text.encode("utf-8")).hexdigest()
    return params


class PanelClient:
    """A manager's session on the table's panel: logged in with the form, as a browser is."""

    def __init__(self, base_url: str) -> None:
        parts = urllib.parse.urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise UserError(f"--panel: {base_url!r} is not a URL like {DEFAULT_PANEL}")
        self.base = base_url.rstrip("/")
        self.jar = http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.jar))
        self.csrf = ""

    def _send(
        self, method: str, path: str, body: bytes | None = None, headers: dict[str, str] | None = None
    ) -> Any:
        request = urllib.request.Request(self.base + path, data=body, method=method, headers=headers or {})
        try:
            with self.opener.open(request, timeout=TIMEOUT_S) as response:
                text = response.read().decode("utf-8", "replace")
        except urllib.error.HTTPError as error:
            detail = error.read().decode("utf-8", "replace")
            try:
                detail = str(json.loads(detail).get("detail", detail))
            except (json.JSONDecodeError, AttributeError):
                detail = detail.strip().splitlines()[0] if detail.strip() else error.reason
            raise UserError(f"the table refused ({error.code}): {detail}") from None
        except (urllib.error.URLError, OSError) as error:
            reason = getattr(error, "reason", error)
            raise UserError(f"--panel {self.base}: cannot reach the table's panel: {reason}") from None
        try:
            return json.loads(text)
        except json.JSONDecodeError:
            return text

    def login(self, user: str, password: str) -> None:
        self._send("GET", "/login")
        token = next((c.value for c in self.jar if c.name == "ft_login_csrf"), "")
        form = urllib.parse.urlencode({"user": user, "password": password, "csrf_token": token}).encode()
        self._send("POST", "/login", form, {"Content-Type": "application/x-www-form-urlencoded"})
        if not any(c.name == "ft_session" for c in self.jar):
            raise UserError(f"--user {user}: the login was refused (wrong name or password, or locked out)")
        session = self._send("GET", "/api/session")
        if not isinstance(session, dict) or not session.get("csrf_token"):
            raise UserError(f"--user {user}: the login was refused (wrong name or password, or locked out)")
        self.csrf = str(session["csrf_token"])

    def call(self, method: str, path: str, payload: dict[str, Any] | None = None) -> Any:
        body = None if payload is None else json.dumps(payload).encode()
        return self._send(method, path, body, {"Content-Type": "application/json", "X-CSRF-Token": self.csrf})


def run(args: argparse.Namespace) -> int:
    params = _params(args) if args.step == "propose" else {}
    client = PanelClient(args.panel)
    password = _password()
    if not password:
        raise UserError("password: empty (give it on standard input or at the prompt)")
    client.login(args.user, password)
    if args.step == "list":
        for change in client.call("GET", "/api/changes"):
            closed = f" by {change['closed_by']}" if change.get("closed_by") else ""
            print(
                f"{change['change_id']}\t{change['status']}{closed}\t{change['summary']}\t"
                f"proposed by {change['proposed_by']}\tlapses {change['lapses_utc']}"
            )
        return 0
    if args.step == "propose":
        answer = client.call(
            "POST", "/api/changes", {"change_kind": args.kind, "params": params, "reason": args.reason}
        )
        print(
            f"Proposed {answer['change_id']}: a second, different manager must approve it "
            f"(flushtable change approve {answer['change_id']})."
        )
        return 0
    change_id = urllib.parse.quote(args.change_id, safe="")
    if args.step == "approve":
        client.call("POST", f"/api/changes/{change_id}/approve", {})
        print(f"Approved {args.change_id}: applied.")
        return 0
    client.call("POST", f"/api/changes/{change_id}/reject", {"reason": args.reason})
    print(f"Rejected {args.change_id}: it never applies.")
    return 0
