"""The linked progressive on the real servers (docs/floor.md "Linked progressive"): a few simulated
tables (controller/simulation/linked_tables.py: real journals, real uplinks, real link clients) on one
meter run by the floor (controller/floor/progressive.py) over a real nats-server and PostgreSQL, while
the floor process, nats-server and PostgreSQL are each SIGKILLed and started again. Afterwards, to the
cent: base + Σ increments + Σ resets − Σ meter awards = the meter; Σ hidden − Σ resets funded +
overflow = the reserve; every award paid exactly once, in the order the controller recorded it; the
in-meter equals the journals' count; every claim replayed gets its first answer."""

from __future__ import annotations

import asyncio
from pathlib import Path

from controller.simulation.floor.servers import PostgresCluster
from controller.simulation.linked_floor import Scenario, run_scenario
from tests.floor.conftest import MakeFloor
from tests.floor.helpers import table_ids


def test_a_linked_meter_through_a_kill_of_each_server(
    tmp_path: Path, make_floor: MakeFloor, own_pg_cluster: PostgresCluster
) -> None:
    floor = make_floor(table_ids(3), postgres=own_pg_cluster, ack_wait_s=2)
    scenario = Scenario(tables=3, rounds=240, several_every=37, pair_every=53, down_rounds=6, timeout_s=120)
    outcome = asyncio.run(run_scenario(tmp_path, floor, scenario))
    assert outcome["problems"] == [], outcome
    assert outcome["kills"] == ["floor", "nats", "postgres"]
    # The presets forced hits: shared 7-card jackpots (resets), claims made while the link was lost.
    assert outcome["resets"] >= 6, outcome
    assert outcome["claims_during_loss"] == 3
    assert outcome["awards"] >= 20, outcome
    # Every round played while a server was down had its Progressive wagers refused at the lock (on a
    # loaded machine a late broadcast may refuse a few more: the books hold either way).
    assert outcome["refused_at_lock_rounds"] >= 3 * scenario.down_rounds, outcome
    assert outcome["replayed_claims"] == outcome["claims"]
