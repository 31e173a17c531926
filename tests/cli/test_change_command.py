"""`flushtable change` end to end: the real daemon on its simulated devices with its panel on a real
port, each manager logging in with their own password through the panel's API, the real command in a
process of its own, a real journal. A paytable change by one manager is not applied until a second
approves; self-approval is refused; a configuration edited by hand alerts at the next start unless two
managers approved its digest first."""

from __future__ import annotations

import asyncio
import hashlib
from pathlib import Path

from controller.config import load_config
from controller.panel.auth import UserStore
from controller.simulation.table import SimulatedTable
from tests.controls.harness import journal_entries, with_table
from tests.daemon.harness import FLUSHTABLE, write_config

PASSWORDS = {"max": "manager-pass-1", "mia": "manager-pass-2"}


def managers(journal_path: Path) -> None:
    store = UserStore(journal_path.parent / "panel-users.json")  # beside the journal (docs/panel.md)
    for name, password in PASSWORDS.items():
        store.add(name, "manager", password)


async def change(table: SimulatedTable, user: str, *arguments: str) -> tuple[int, str, str]:
    """The command against the table's panel, ``user``'s password on standard input."""
    panel = table.daemon.panel
    assert panel is not None
    process = await asyncio.create_subprocess_exec(
        FLUSHTABLE,
        "change",
        "--panel",
        panel.url,
        "--user",
        user,
        *arguments,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(PASSWORDS[user].encode() + b"\n"), 60)
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


def test_a_paytable_change_needs_a_second_manager_from_the_command_line(tmp_path: Path) -> None:
    config = load_config(write_config(tmp_path, "hcf-house"))
    managers(config.journal_path)

    async def work(table: SimulatedTable) -> list[tuple[int, str, str]]:
        engine = table.daemon.engine
        steps = [
            await change(
                table,
                "max",
                "propose",
                "paytable",
                "--set",
                "wager=flush",
                "--set",
                "spec=hcf-flush-dp",
                "--reason",
                "promotion",
            )
        ]
        before = engine.view().config.paytables["flush"]
        steps.append(await change(table, "max", "approve", "CHCF1-0001"))
        still = engine.view().config.paytables["flush"]
        steps.append(await change(table, "mia", "list"))
        steps.append(await change(table, "mia", "approve", "CHCF1-0001"))
        after = engine.view().config.paytables["flush"]
        steps.append(await change(table, "mia", "approve", "CT-nope"))
        steps.append((0, f"{before}|{still}|{after}", ""))
        return steps

    steps = with_table(config, config.journal_path, work, panel_bind=("127.0.0.1", 0))
    proposed, self_approval, listed, approved, unknown, paytables = steps
    assert proposed[0] == 0
    assert proposed[1].startswith("Proposed CHCF1-0001: a second, different manager")
    assert self_approval[0] == 2
    assert self_approval[1] == ""
    assert (
        self_approval[2]
        .strip()
        .endswith(
            "the table refused (409): max proposed CHCF1-0001; a second, different manager must approve it"
        )
    )
    assert "Traceback" not in self_approval[2]
    assert len(self_approval[2].strip().splitlines()) == 1
    assert listed[0] == 0
    assert listed[1].startswith("CHCF1-0001\tpending\tflush paytable hcf-flush-dp\tproposed by max")
    assert approved == (0, "Approved CHCF1-0001: applied.\n", "")
    assert unknown[0] == 2
    assert "no proposal CT-nope" in unknown[2]
    before, still, after = paytables[1].split("|")
    assert before == still != after  # nothing applied until the second manager approved
    stored = journal_entries(
        config.journal_path, ["change_proposed", "change_refused", "change_approved", "paytable_set"]
    )
    by_kind = [(entry.kind, entry.payload.get("by")) for entry in stored]
    assert by_kind == [
        ("change_proposed", "max"),
        ("change_refused", "max"),
        ("change_approved", "mia"),
        ("paytable_set", "mia"),
        ("change_refused", "mia"),
    ]
    logins = journal_entries(config.journal_path, ["login"])
    assert {entry.payload["user"] for entry in logins} == {"max", "mia"}  # each with their own password


def test_a_hand_edited_configuration_alerts_at_the_next_start_unless_approved(tmp_path: Path) -> None:
    path = write_config(tmp_path, "hcf-house")
    journal_path = tmp_path / "journal.sqlite"
    managers(journal_path)

    async def nothing(_table: SimulatedTable) -> None:
        return None

    def start(**options: object) -> None:
        with_table(load_config(path), journal_path, nothing, **options)  # type: ignore[arg-type]

    def checks() -> list[dict[str, object]]:
        return [entry.payload for entry in journal_entries(journal_path, ["config_checked"])]

    def alerts() -> list[str]:
        return [
            str(entry.payload["reason"]["message"])
            for entry in journal_entries(journal_path, ["fault_raised"])
            if entry.payload["kind"] == "config_changed"
        ]

    start()
    start()  # unchanged: no alert
    assert [c["changed"] for c in checks()] == [[], []]
    assert alerts() == []
    # Edited by hand: the maximum ante doubled.
    path.write_text(path.read_text().replace("max_ante_cents = 50000", "max_ante_cents = 100000"))
    start()
    third = checks()[-1]
    assert third["unapproved"] is True
    assert third["changed"] == ["limits.max_ante_cents: 50000 -> 100000"]
    assert third["previous_file_sha256"] == checks()[1]["file_sha256"] != third["file_sha256"]
    assert alerts() == [
        f"the configuration {path.name} changed since the last start with no approved change: "
        "limits.max_ante_cents: 50000 -> 100000"
    ]
    # The next file, approved by two managers before it is installed: no alert at its start.
    new_text = path.read_text().replace("min_ante_cents = 500", "min_ante_cents = 1000")
    new_file = tmp_path / "next.toml"
    new_file.write_text(new_text)

    async def approve_the_file(table: SimulatedTable) -> list[tuple[int, str, str]]:
        return [
            await change(
                table, "max", "propose", "config_file", "--file", str(new_file), "--reason", "new minimum"
            ),
            await change(table, "mia", "approve", "CHCF1-0001"),
        ]

    proposed, approved = with_table(
        load_config(path), journal_path, approve_the_file, panel_bind=("127.0.0.1", 0)
    )
    assert proposed[0] == 0
    assert approved == (0, "Approved CHCF1-0001: applied.\n", "")
    path.write_text(new_text)
    start()
    last = checks()[-1]
    assert last["approved_change"] == "CHCF1-0001"
    assert last["unapproved"] is False
    assert last["file_sha256"] == hashlib.sha256(new_text.encode()).hexdigest()
    assert last["changed"] == ["limits.min_ante_cents: 500 -> 1000"]
    assert len(alerts()) == 1  # still only the hand edit's
