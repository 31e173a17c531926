"""The panel's operator actions on the real round engine: :class:`EngineTableActions`.

controller.engine.TableEngine is synchronous and pure: each action takes the time and returns outputs
(journal records, device commands, alerts, refusals) for the daemon's shell to carry out. This adapter
gives the panel the :class:`TableActions` it expects: it supplies the time, hands the outputs to the
shell's ``perform`` (which journals and sends them, as it does for every other engine output), and turns
a refusal into ActionRefused with the engine's own reason.

Opening and closing the table and changing limits and paytables are the engine's too: it refuses them
while a round is open (a manager changes them between rounds), and the refusal becomes a 409.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from controller.engine import Output, Refused, TableEngine
from controller.engine import actions as engine_actions
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
        self.perform = perform

    def _carry_out(self, outputs: Sequence[Output]) -> None:
        self.perform(outputs)  # the engine journals its refusals too: the shell writes them either way
        refused = [output for output in outputs if isinstance(output, Refused)]
        if refused:
            raise ActionRefused(refused[0].reason)

    def clear_fault(self, fault_id: str, by: str, reason: str) -> None:
        self._carry_out(self.engine.handle(engine_actions.ClearFault(fault_id, by, reason), self.now_s()))

    def void_round(self, reason: str, by: str) -> None:
        self._carry_out(self.engine.handle(engine_actions.VoidRound(reason, by), self.now_s()))

    def move_button(self, seat: int, by: str) -> None:
        self._carry_out(self.engine.handle(engine_actions.MoveButton(seat, by), self.now_s()))

    def open_table(self, by: str) -> None:
        self._carry_out(self.engine.handle(engine_actions.OpenTable(by), self.now_s()))

    def close_table(self, by: str, reason: str) -> None:
        self._carry_out(self.engine.handle(engine_actions.CloseTable(by, reason), self.now_s()))

    def set_limits(self, min_ante_cents: int, max_ante_cents: int, by: str) -> None:
        self._carry_out(
            self.engine.handle(engine_actions.SetLimits(min_ante_cents, max_ante_cents, by), self.now_s())
        )

    def set_paytable(self, wager: str, paytable: str, by: str) -> None:
        self._carry_out(self.engine.handle(engine_actions.SetPaytable(wager, paytable, by), self.now_s()))
