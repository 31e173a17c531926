"""The panel's operator actions on the real round engine: :class:`EngineTableActions`.

controller.engine.TableEngine is synchronous and pure: ``engine.handle(action, now_s)`` takes an
operator action (controller/engine/actions.py) and the time and returns outputs (journal records, device
commands, alerts, refusals) for the daemon's shell to carry out. This adapter gives the panel the
:class:`TableActions` it expects: one ``perform(action)`` that supplies the time, hands the outputs to
the shell's ``perform`` (which journals and sends them, as it does for every other engine output), and
turns a refusal into ActionRefused with the engine's own reason.

Opening and closing the table and changing limits and paytables are the engine's too: it refuses them
while a round is open (a manager changes them between rounds), and the refusal becomes a 409.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from controller.engine import Output, Refused, TableEngine
from controller.engine.actions import OperatorAction
from controller.panel.backend import ActionRefused


class EngineTableActions:
    def __init__(
        self,
        engine: TableEngine,
        *,
        now_s: Callable[[], float],
        perform: Callable[[Sequence[Output]], None],
    ) -> None:
        self.engine = engine
        self.now_s = now_s
        self.carry_out = perform  # the shell's: journal (committed before it returns), then act

    async def perform(self, action: OperatorAction) -> None:
        outputs = self.engine.handle(action, self.now_s())
        self.carry_out(outputs)  # the engine journals its refusals too: the shell writes them either way
        refused = [output for output in outputs if isinstance(output, Refused)]
        if refused:
            raise ActionRefused(refused[0].reason)

    async def run(self, work: Callable[[TableEngine, float], list[Output]]) -> list[Output]:
        """A step of the daemon's own kind (the change control's): its outputs carried out alike."""
        outputs = work(self.engine, self.now_s())
        self.carry_out(outputs)
        return outputs
