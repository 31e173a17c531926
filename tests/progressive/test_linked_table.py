"""A linked table's side (docs/floor.md "Linked progressive", docs/configuration.md ``[progressive]``
``link``): the configuration's link keys and their refusals, and the engine's controller on a linked
table (controller/progressive/linked.py ``LinkedTableController``): contributions never sent (the floor
counts the journal), a claim pending until the floor's answer came (``ProgressiveUnavailable``: the
engine asks again on its tick), a refused claim one line, a confirmation queued for the floor. No
server: the link client is not connected (the floor's side is tests/floor/test_linked_progressive*)."""

from __future__ import annotations

import asyncio
import socket
import ssl
from pathlib import Path
from typing import Any

import nats
import nats.errors
import pytest

from controller.config import ConfigError, TableConfig, load_config
from controller.config.resolved import UplinkConfig
from controller.engine.progressive import ProgressiveUnavailable
from controller.errors import UserError
from controller.progressive.controller import ClaimAnswer
from controller.progressive.linked import LinkClient, LinkConfig, LinkedClaim, LinkedTableController
from controller.progressive.model import Hit, parse_parameters
from controller.simulation.floor.certificates import make_ca
from tests.config.test_config import BASE
from tests.config.test_uplink_section import UPLINK

PROGRESSIVE = """
[progressive]
unit_cents = 100
base_cents = 10000
reset_cents = 10000
increment_percent = 10
hidden_percent = 2
"""


def _load(directory: Path, text: str) -> TableConfig:
    (directory / "nats-table.pw").write_text("pw\n")
    (directory / "floor-ca.pem").write_text("-----BEGIN CERTIFICATE-----\n")
    path = directory / "table.toml"
    path.write_text(BASE.replace('game = "high-card-flush"', 'game = "top-flush"') + text)
    return load_config(path)


def test_the_link_keys(tmp_path: Path) -> None:
    config = _load(tmp_path, UPLINK + PROGRESSIVE + 'link = "MAIN"\nlink_timeout_s = 2.5\n')
    assert config.progressive_link == "MAIN"
    assert config.progressive_link_timeout_s == 2.5
    standalone = _load(tmp_path, PROGRESSIVE)
    assert standalone.progressive_link is None
    no_uplink = "progressive.link: a linked progressive talks to the floor over [uplink]: add it"
    no_link = "progressive.link_timeout_s: only a linked progressive has a link (give link)"
    short = "progressive.link_timeout_s: from 0.5 to 60 seconds, not 0.1"
    bad_name = "progressive.link: a link's name is 1 to 32 letters, digits or _, not 'a.b'"
    for text, line in (
        (PROGRESSIVE + 'link = "MAIN"\n', no_uplink),
        (UPLINK + PROGRESSIVE + "link_timeout_s = 2\n", no_link),
        (UPLINK + PROGRESSIVE + 'link = "MAIN"\nlink_timeout_s = 0.1\n', short),
        (UPLINK + PROGRESSIVE + 'link = "a.b"\n', bad_name),
    ):
        with pytest.raises(ConfigError) as refused:
            _load(tmp_path, text)
        assert str(refused.value).endswith(line), (str(refused.value), line)


def test_the_engines_controller_on_a_linked_table(tmp_path: Path) -> None:
    parameters = parse_parameters(
        {
            "unit_cents": 100,
            "base_cents": 10_000,
            "reset_cents": 10_000,
            "increment_percent": 10,
            "hidden_percent": 2,
        }
    )
    client = LinkClient(
        LinkConfig(
            "MAIN", "T1", UplinkConfig(("tls://127.0.0.1:1",), "S1", "table-T1", "pw", tmp_path / "ca.pem")
        )
    )
    settled: dict[str, int] = {}
    controller = LinkedTableController(client, parameters, settled.get)
    controller.contribute_now("T1", "R1", 3)  # nothing sent: the journal is the count
    assert not client.pending
    with pytest.raises(ProgressiveUnavailable, match="not yet in the journal"):
        controller.claim_now("T1", "R1", [Hit(1, 7)])
    settled["R1"] = 12
    with pytest.raises(ProgressiveUnavailable, match="sent to the floor; waiting for its answer"):
        controller.claim_now("T1", "R1", [Hit(1, 7)])
    assert list(client.pending) == ["R1"]
    assert b'"through_seq":12' in client.pending["R1"].request
    with pytest.raises(ProgressiveUnavailable):  # asked again on the tick: the same pending claim
        controller.claim_now("T1", "R1", [Hit(1, 7)])
    assert len(client.pending) == 1
    answer = ClaimAnswer("T1", "R1", ())
    client.pending.clear()
    client.answers["R1"] = LinkedClaim("recorded", answer)
    assert controller.claim_now("T1", "R1", [Hit(1, 7)]) is answer
    client.answers["R2"] = LinkedClaim(
        "refused", reason="progressive: claim for round R2 at table T1 refused"
    )
    with pytest.raises(UserError, match=r"^progressive: claim for round R2 at table T1 refused$"):
        controller.claim_now("T1", "R2", [Hit(1, 7)])
    with pytest.raises(UserError, match="the confirmation was sent to the floor"):
        controller.confirm_paid_now("T1/R1/1", by="sup-ann")
    assert client.confirm_queue == [("T1/R1/1", "sup-ann")]
    assert not controller.link_state().up  # no meter heard yet: Progressive wagers refused at the lock


def test_a_supervisors_confirmation_of_a_linked_award_is_journaled_as_sent(tmp_path: Path) -> None:
    """The engine on a linked table: ConfirmProgressiveAward is queued for the floor and journaled as
    sent by the supervisor (an operator_action, not a refusal)."""
    from controller.engine import TableConfig, actions
    from tests.engine.table import Table, stack

    parameters = parse_parameters(
        {"unit_cents": 100, "base_cents": 10_000, "reset_cents": 10_000, "increment_percent": 10,
         "hidden_percent": 2}
    )  # fmt: skip
    client = LinkClient(
        LinkConfig(
            "MAIN", "T1", UplinkConfig(("tls://127.0.0.1:1",), "S1", "table-T1", "pw", tmp_path / "ca.pem")
        )
    )
    table = Table(TableConfig(game="top-flush", progressive=parameters), stack())
    settled: dict[str, int] = {}
    controller = LinkedTableController(client, parameters, settled.get)
    table.engine.set_progressive_controller(controller)  # as the daemon does
    outs = table.event(actions.ConfirmProgressiveAward("MAIN/T1/R1/1", by="sue"))
    assert table.refusals(outs) == []
    (sent,) = table.journal("linked_confirmation_sent")
    assert sent.source == "operator:sue"
    assert sent.payload["award_id"] == "MAIN/T1/R1/1"
    assert str(sent.payload["message"]).startswith("progressive: award MAIN/T1/R1/1 is the linked meter's")
    assert client.confirm_queue == [("MAIN/T1/R1/1", "sue")]


def test_the_link_connects_as_the_uplink_does_with_its_timeout_and_tls(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The link reaches the floor as the table's ``[uplink]`` says: its connect timeout, and the
    uplink's TLS context (TLS 1.2 at least). A real connection to a real 127.0.0.1 port that accepts and
    never speaks (no INFO: the connect can only time out), the options it passed to nats.connect read
    (the real one, called through), the wait bounded; no timing asserted."""
    ca = make_ca(tmp_path / "tls")
    silent = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    silent.bind(("127.0.0.1", 0))
    silent.listen(4)
    port = silent.getsockname()[1]
    passed: list[dict[str, Any]] = []
    real_connect = nats.connect

    async def spy(**options: Any) -> Any:
        passed.append(options)
        return await real_connect(**options)

    monkeypatch.setattr(nats, "connect", spy)
    uplink = UplinkConfig(
        (f"tls://127.0.0.1:{port}",), "S1", "table-T1", "pw", ca.ca_cert, connect_timeout_s=0.75
    )
    client = LinkClient(LinkConfig("MAIN", "T1", uplink))

    async def connect_once() -> None:
        with pytest.raises((nats.errors.Error, OSError, TimeoutError)):
            await asyncio.wait_for(client._connect(), 60)  # bounded: far above any timeout here

    try:
        asyncio.run(connect_once())
    finally:
        silent.close()
    (options,) = passed
    assert options["connect_timeout"] == 0.75
    tls = options["tls"]
    assert isinstance(tls, ssl.SSLContext)
    assert tls.minimum_version == ssl.TLSVersion.TLSv1_2
