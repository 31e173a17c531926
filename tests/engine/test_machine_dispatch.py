"""The round machine's direct dispatch (controller/engine/machine.py ``DirectDispatch``) against the
library's own trigger methods: every game's machine, driven side by side by the same seeded sequences of
triggers, valid and not, with callbacks that fail, a condition that refuses, and triggers fired from
inside callbacks (queued behind the running one). After every trigger both models must be in the same
state and have seen the same callbacks, in the same order, with the same arguments (the transition's
source and dest, the event's name, the error's type and text)."""

from __future__ import annotations

import random
from typing import Any

import pytest

from controller.engine import machine as m

STEPS_PER_SEQUENCE = 60
SEQUENCES_PER_GAME = 40


class Recorder:
    """A model that logs what the machine asks of it. ``plan`` decides, from the callback's view, when
    a callback fails and which trigger a callback fires: the same plan for both sides."""

    state: str

    def __init__(self, plan: dict[str, Any]) -> None:
        self.plan = plan
        self.log: list[tuple[object, ...]] = []
        self.fire: Any = None  # set once the side's machine is built

    def table_may_start(self, event: Any) -> bool:
        allowed = bool(self.plan["may_start"])
        self.log.append(
            ("condition", event.event.name, event.transition.source, event.transition.dest, allowed)
        )
        if self.plan["condition_fails"]:
            raise ValueError("condition failed")
        return allowed

    def after_state_change(self, event: Any) -> None:
        self.log.append(
            ("after", event.event.name, event.transition.source, event.transition.dest, self.state)
        )
        dest = event.transition.dest
        if dest in self.plan["fail_on"]:
            raise RuntimeError(f"callback failed entering {dest}")
        chained = self.plan["chain"].get(dest)
        if chained is not None:
            self.fire(chained)  # from inside a callback: queued behind this transition
            self.log.append(("chained", chained, self.state))

    def on_machine_exception(self, event: Any) -> None:
        error = event.error
        self.log.append(("exception", type(error).__name__, str(error), self.state))
        if self.plan["hold_on_error"] and m.top(self.state) != m.HELD:
            self.fire("hold")


def library_side(game: str, plan: dict[str, Any]) -> Recorder:
    model = Recorder(plan)
    m.build_machine(model, game, on_exception="on_machine_exception", after_state_change="after_state_change")
    model.fire = lambda trigger: getattr(model, trigger)()  # the trigger methods transitions bound
    return model


def direct_side(game: str, plan: dict[str, Any]) -> Recorder:
    model = Recorder(plan)
    machine = m.build_machine(
        model, game, on_exception="on_machine_exception", after_state_change="after_state_change"
    )
    dispatch = m.DirectDispatch(
        machine, model, after_state_change="after_state_change", on_exception="on_machine_exception"
    )
    model.fire = dispatch.trigger
    return model


def random_plan(rng: random.Random, definition: m.RoundDefinition) -> dict[str, Any]:
    triggers = list(definition.triggers())
    states = [*definition.states, *(m.held_in(s) for s in definition.resumable_states)]
    return {
        "may_start": rng.random() < 0.8,
        "condition_fails": rng.random() < 0.1,
        "fail_on": set(rng.sample(states, k=rng.randint(0, 2))),
        "chain": {state: rng.choice(triggers) for state in rng.sample(states, k=rng.randint(0, 3))},
        "hold_on_error": rng.random() < 0.7,
    }


@pytest.mark.parametrize("game", m.GAME_NAMES)
def test_direct_dispatch_does_what_the_library_does(game: str) -> None:
    rng = random.Random(f"dispatch-{game}")
    definition = m.definition(game)
    triggers = list(definition.triggers())
    for _sequence in range(SEQUENCES_PER_GAME):
        plan = random_plan(rng, definition)
        library, direct = library_side(game, plan), direct_side(game, plan)
        for step in range(STEPS_PER_SEQUENCE):
            trigger = rng.choice(triggers)
            library.fire(trigger)
            direct.fire(trigger)
            assert direct.state == library.state, (plan, step, trigger, library.log[-5:])
            assert direct.log == library.log, (plan, step, trigger)


@pytest.mark.parametrize("game", m.GAME_NAMES)
def test_direct_dispatch_knows_the_triggers_the_library_knows(game: str) -> None:
    model = Recorder(random_plan(random.Random(1), m.definition(game)))
    machine = m.build_machine(
        model, game, on_exception="on_machine_exception", after_state_change="after_state_change"
    )
    dispatch = m.DirectDispatch(
        machine, model, after_state_change="after_state_change", on_exception="on_machine_exception"
    )
    for state in machine.get_nested_state_names():
        assert dispatch.triggers(state) == frozenset(machine.get_triggers(state)), state
