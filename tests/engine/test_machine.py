"""The round machine definitions, their drawings, and on_exception -> held."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections import deque

import pytest
from transitions.extensions import HierarchicalGraphMachine

from controller.cli import main
from controller.engine import TableConfig, TableEngine, actions
from controller.engine import machine as m
from controller.engine.outputs import Alert, JournalRecord
from drivers.events import Deal
from tests.engine.table import Table, stack
from tests.engine.test_rounds import HCF_DEALER, HCF_SEAT1, HCF_SEAT3

GAMES = m.GAME_NAMES


def reachable(definition: m.RoundDefinition, start: str) -> set[str]:
    """The top-level states reachable from ``start`` (a child of ``held`` counts as ``held``)."""
    edges: dict[str, set[str]] = {}
    for item in definition.transitions:
        edges.setdefault(m.top(item.source), set()).add(m.top(item.dest))
    seen = {start}
    queue = deque([start])
    while queue:
        for nxt in edges.get(queue.popleft(), ()):
            if nxt not in seen:
                seen.add(nxt)
                queue.append(nxt)
    return seen


@pytest.mark.parametrize("game", GAMES)
def test_definition_has_the_issue_states_and_held_and_dead_from_anywhere(game: str) -> None:
    definition = m.definition(game)
    for state in ("idle", "betting", "bets_locked", "dealing", "reveal", "settling", "paying", "complete"):
        assert state in definition.states
    if game == m.CHASE_THE_FLUSH:
        assert definition.decision_states == ("preflop", "flop", "river")
        assert definition.dealing_states == ("dealing", "dealing_flop", "dealing_turn_river")
    else:
        assert definition.decision_states == ("decisions",)
    for state in definition.states:
        assert {m.HELD, m.DEAD} <= reachable(definition, state) | ({m.HELD} if state == m.HELD else set()) | (
            {m.DEAD} if state == m.DEAD else set()
        )
        assert m.IDLE in reachable(definition, state)  # no state is a trap
        if state != m.HELD:
            assert any(t.source == state and m.top(t.dest) == m.HELD for t in definition.transitions)
    for state in definition.round_states:
        assert any(t.source == state and t.dest == m.DEAD for t in definition.transitions)
        # held remembers where: hold goes into the child of held named for the state, resume leaves it
        assert any(t.source == state and t.dest == m.held_in(state) for t in definition.transitions)
        assert any(
            t.source == m.held_in(state) and t.dest == state and t.trigger == "resume"
            for t in definition.transitions
        )
    # After the round (complete, dead) a hold is between rounds: it resumes to idle.
    for state in (m.COMPLETE, m.DEAD):
        assert [t.dest for t in definition.transitions if t.source == state and t.trigger == "hold"] == [
            m.held_in(m.IDLE)
        ]


@pytest.mark.parametrize("game", GAMES)
def test_the_machine_that_runs_is_built_from_the_definition(game: str) -> None:
    engine = TableEngine(TableConfig(game=game))
    machine = engine._flow.machine
    assert machine.has_queue
    assert list(machine.states) == list(m.definition(game).states)
    built = {
        (trigger, source, transition.dest)
        for trigger, event in machine.events.items()
        for source, transitions in event.transitions.items()
        for transition in transitions
    }
    assert built == {(t.trigger, t.source, t.dest) for t in m.definition(game).transitions}


@pytest.mark.parametrize("game", GAMES)
def test_mermaid_draws_every_transition(game: str) -> None:
    text = m.mermaid(game)
    assert text.startswith("---\ntitle: ")
    assert "stateDiagram-v2" in text
    for item in m.definition(game).transitions:
        assert f"    {m.mermaid_id(item.source)} --> {m.mermaid_id(item.dest)}: {item.trigger}" in text
    for child in m.definition(game).resumable_states:
        assert f'        state "{child}" as held_{child}' in text


@pytest.mark.parametrize("game", GAMES)
def test_transitions_own_mermaid_engine_accepts_the_definition(game: str) -> None:
    class Model:
        def table_may_start(self, _event: object) -> bool:
            return True

    model = Model()
    machine = m.build_machine(
        model,
        game,
        on_exception=lambda _event: None,
        machine_class=HierarchicalGraphMachine,
        graph_engine="mermaid",
    )
    source = machine.get_graph().source
    for state in m.definition(game).states:
        assert state in source


@pytest.mark.parametrize("game", GAMES)
def test_svg_is_well_formed_and_has_every_state(game: str) -> None:
    root = ET.fromstring(m.svg(game))
    ids = {element.get("id") for element in root.iter() if element.get("id")}
    for state in m.definition(game).states:
        assert f"state-{state}" in ids


def test_diagram_command(capsys: pytest.CaptureFixture[str], tmp_path: object) -> None:
    assert main(["diagram", "--game", "chase-the-flush"]) == 0
    out = capsys.readouterr().out
    assert "preflop --> dealing_flop: close_decisions" in out
    assert main(["diagram", "--game", "top-flush", "--format", "svg"]) == 0
    assert capsys.readouterr().out.startswith("<svg ")
    assert main(["diagram", "--game", "poker"]) == 2
    err = capsys.readouterr().err
    assert err.strip() == (
        "flushtable diagram: --game: unknown game 'poker' "
        "(one of: high-card-flush (hcf), top-flush (tf), chase-the-flush (ctf))"
    )
    assert len(err.splitlines()) == 1


def test_unknown_game_is_refused_naming_the_field() -> None:
    from controller.errors import UserError

    with pytest.raises(UserError, match=r"^game: unknown game 'poker'"):
        m.definition("poker")


def failing_engine() -> TableEngine:
    """An engine whose state-change callback fails on entering `dealing`: a real exception inside a
    transitions callback, which on_exception must turn into a hold."""
    engine = TableEngine(TableConfig())
    flow = engine._flow
    entered = flow.state_entered

    def state_entered(source: str, dest: str, trigger: str) -> None:
        entered(source, dest, trigger)
        if dest == "dealing":
            raise ValueError("simulated callback failure")

    flow.state_entered = state_entered  # type: ignore[method-assign]
    return engine


def test_on_exception_holds_the_round_with_a_latched_integrity_fault() -> None:
    table = Table(TableConfig(), stack(HCF_SEAT1, HCF_SEAT3, HCF_DEALER))
    table.engine = failing_engine()
    table.start()
    table.bet(1, "ante", 500)
    table.lock()
    assert table.engine.view().state == "held"
    assert (
        m.held_from(table.engine._flow.state) == "dealing"
    )  # the nested state remembers where the round was
    assert not [o for o in table.outputs if isinstance(o, Deal)]  # nothing acts after the failure
    faults = [o for o in table.outputs if isinstance(o, JournalRecord) and o.kind == "fault_raised"]
    assert faults[0].payload["kind"] == "integrity"
    assert faults[0].payload["severity"] == "latching"
    assert faults[0].payload["reason"]["code"] == "engine_error"
    assert "simulated callback failure" in faults[0].payload["reason"]["message"]
    assert any(isinstance(o, Alert) and o.severity == "latching" for o in table.outputs)
    assert table.engine.view().held


def settle_fails_once() -> TableEngine:
    """An engine whose first settlement fails (a settle error is an engine error): the table holds in
    `settling`, and clearing the fault settles the round, once."""
    engine = TableEngine(TableConfig())
    settling = engine._flow._settling
    settle_input = settling.settle_input
    failed: list[bool] = []

    def failing_settle_input(*, dead: bool = False) -> dict[str, object]:
        if not dead and not failed:
            failed.append(True)
            raise RuntimeError("settle input unavailable")
        return settle_input(dead=dead)

    settling.settle_input = failing_settle_input  # type: ignore[method-assign]
    return engine


def test_a_failed_settlement_holds_and_settles_once_when_cleared() -> None:
    table = Table(TableConfig(), stack(HCF_SEAT1, HCF_SEAT3, HCF_DEALER))
    table.engine = settle_fails_once()
    table.start()
    table.bet(1, "ante", 500)
    table.lock()
    table.bet(1, "raise", 500)
    table.key("confirm")
    assert table.engine.view().state == "held"
    assert m.held_from(table.engine._flow.state) == "settling"
    assert table.journal("round_settled") == []
    fault = table.journal("fault_raised")[0].payload
    assert fault["kind"] == "integrity"
    assert fault["reason"]["code"] == "engine_error"
    assert "settle input unavailable" in fault["reason"]["message"]
    table.call(table.engine.handle, actions.ClearFault(str(fault["fault_id"]), "sue", "checked"), table.now_s)
    assert table.engine.view().state == "paying"
    assert len(table.journal("round_settled")) == 1
