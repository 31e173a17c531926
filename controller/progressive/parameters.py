"""The one function a change of the progressive's parameters goes through (docs/rules.md "Progressive:
the controller"): a manager's, between rounds, journaled. The panel's action and the two-person control
of money settings call it; nothing else changes a meter's parameters."""

from __future__ import annotations

from controller.errors import UserError
from controller.progressive.controller import TableSideProgressive
from controller.progressive.model import ProgressiveParameters, parse_parameters

MANAGER = "manager"


def change_progressive_parameters(
    controller: TableSideProgressive,
    requested: object,
    *,
    by: str,
    role: str,
    round_in_play: bool,
    reason: str = "",
) -> ProgressiveParameters:
    """Check and record new parameters; the new parameters, or UserError with one clear line. Refused:
    anyone but a manager, a round in play (parameters change only between rounds), parameters that make
    no sense (``model.check_parameters``), a limit below the meter, no change at all."""
    if role != MANAGER:
        raise UserError(f"progressive: only a manager changes the progressive's parameters, not a {role}")
    if round_in_play:
        raise UserError("progressive: parameters change only between rounds; a round is in play")
    parameters = requested if isinstance(requested, ProgressiveParameters) else parse_parameters(requested)
    controller.change_parameters_now(parameters, by=by, reason=reason or "changed by a manager")
    return parameters
