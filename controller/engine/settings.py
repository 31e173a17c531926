"""The table settings a manager changes: the ante limits, the bonus paytables, and whether the table is
open. Limits and paytables change between rounds only; a closed table starts no round.

The settings live in the table's ``TableConfig``, replaced (never mutated) on each change; a restart
applies the last ones set when the configuration file is the same (docs/engine.md "The manager's
settings").
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

from controller.engine import actions as a
from controller.engine import machine as m
from controller.engine.context import TableContext, operator
from controller.engine.doors import BankingMode
from controller.engine.state import RecoveredState, TableConfig
from controller.errors import UserError
from controller.journal import entries as e
from controller.money import money
from controller.rules.paytables import DEFAULT_PRESET, parse_paytable
from controller.rules.settle import MAX_AMOUNT_CENTS
from drivers.events import ShowText


class TableSettings:
    """Limits, paytables, open and close."""

    def __init__(self, ctx: TableContext, recovered: RecoveredState, *, bank: BankingMode) -> None:
        """``ctx.config``: the configuration with the manager's recovered settings applied
        (``recovered_config``). ``bank``: its door, the banking mode the default paytables depend on."""
        self.ctx = ctx
        self._bank = bank
        # A manager closed the table (journaled table_closed by an operator): no round starts.
        self.table_open = not recovered.table_closed
        self.closed_reason: str | None = recovered.closed_reason if recovered.table_closed else None

    def handlers(self) -> dict[type, Callable[[Any], None]]:
        return {
            a.SetLimits: lambda action: self._set_limits(
                action.min_ante_cents, action.max_ante_cents, action.by
            ),
            a.SetBonusLimit: lambda action: self._set_limits(
                self.ctx.config.min_ante_cents,
                self.ctx.config.max_ante_cents,
                action.by,
                {action.wager: action.max_cents},
            ),
            a.SetPaytable: lambda action: self._set_paytable(action.wager, action.spec, action.by),
            a.OpenTable: lambda action: self._open_table(action.by),
            a.CloseTable: lambda action: self._close_table(action.by, action.reason),
        }

    def paytable_in_effect(self, wager: str) -> str | dict[str, Any] | None:
        """The table's paytable for a bonus wager: the one set, or the game's default preset's name."""
        ctx = self.ctx
        explicit = ctx.config.paytables.get(wager)
        if explicit is not None:
            return _paytable_json(explicit, wager)
        return DEFAULT_PRESET.get((ctx.config.game, self._bank.banking_mode(), wager))

    def why_not_between_rounds(self) -> str | None:
        """None between rounds (idle, or held with no round open), else why not."""
        ctx = self.ctx
        live = ctx.round
        if live is not None and not live.closed:
            return f"a round is open ({ctx.state}): only between rounds"
        if ctx.state in (m.IDLE, m.COMPLETE):
            return None
        if ctx.state == m.HELD and ctx.where == m.IDLE:
            return None
        return (
            f"betting is open ({ctx.state}): only between rounds"
            if ctx.state == m.BETTING
            else (f"a round is in progress ({ctx.state}): only between rounds")
        )

    def _set_limits(
        self,
        min_ante_cents: int,
        max_ante_cents: int,
        by: str,
        max_bonus_cents: object = None,
    ) -> None:
        ctx = self.ctx
        if not by.strip():
            ctx.refuse("set_limits", "by: the manager's name is required", "unknown")
            return
        for name, value in (("min_ante_cents", min_ante_cents), ("max_ante_cents", max_ante_cents)):
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_AMOUNT_CENTS:
                ctx.refuse(
                    "set_limits",
                    f"{name}: must be a whole number of cents from 1 to {MAX_AMOUNT_CENTS}, not {value!r}",
                    by,
                )
                return
        if min_ante_cents > max_ante_cents:
            ctx.refuse(
                "set_limits",
                f"min_ante_cents: {money(min_ante_cents)} is above max_ante_cents {money(max_ante_cents)}",
                by,
            )
            return
        # Only what the manager names changes (docs/engine.md "The manager's settings"): a bonus wager
        # with a maximum of its own (the configuration's, or set by a manager) keeps it whatever the ante
        # does, and one without keeps following the ante's maximum, the new one included. Writing out
        # every bonus maximum here would freeze those at the ante's maximum of this moment, so a later
        # change of the ante (or of another bonus) would silently leave them behind.
        own_maxima = dict(ctx.config.max_bonus_cents)
        if max_bonus_cents is not None:
            if not isinstance(max_bonus_cents, Mapping):  # the panel's JSON may give anything
                ctx.refuse("set_limits", "max_bonus_cents: must be an object {wager: cents}", by)
                return
            for wager, value in max_bonus_cents.items():
                if wager not in ctx.spec.bonus_wagers:
                    ctx.refuse(
                        "set_limits",
                        f"max_bonus_cents.{wager}: not a bonus wager of {ctx.config.game} "
                        f"(bonus wagers: {', '.join(ctx.spec.bonus_wagers)})",
                        by,
                    )
                    return
                if (
                    isinstance(value, bool)
                    or not isinstance(value, int)
                    or not 1 <= value <= MAX_AMOUNT_CENTS
                ):
                    ctx.refuse(
                        "set_limits",
                        f"max_bonus_cents.{wager}: must be a whole number of cents from 1 to "
                        f"{MAX_AMOUNT_CENTS}, not {value!r}",
                        by,
                    )
                    return
                own_maxima[wager] = value
        why_not = self.why_not_between_rounds()
        if why_not is not None:
            ctx.refuse("set_limits", why_not, by)
            return
        min_before, max_before = ctx.config.min_ante_cents, ctx.config.max_ante_cents
        before = self._limits_json(min_before, max_before)
        ctx.replace_config(
            dataclasses.replace(
                ctx.config,
                min_ante_cents=min_ante_cents,
                max_ante_cents=max_ante_cents,
                max_bonus_cents=own_maxima,
            )
        )
        after = self._limits_json(min_ante_cents, max_ante_cents)
        ctx.journal(
            e.LimitsSet(by=by, before=before, after=after, config_digest=ctx.config.config_digest),
            source=operator(by),
        )
        ctx.out.append(
            ShowText(ctx.config.display_device, f"Ante {money(min_ante_cents)}-{money(max_ante_cents)}")
        )

    def _limits_json(self, min_ante_cents: int, max_ante_cents: int) -> dict[str, object]:
        """The limits as journaled (``before``/``after``): the ante's, every bonus wager's maximum in
        effect (``max_bonus_cents``: its own, or the ante's maximum), and which of them are their own
        (``own_max_bonus_cents``: what a restart restores; a bonus wager not named there follows the
        ante's maximum)."""
        config = self.ctx.config
        return {
            "min_ante_cents": min_ante_cents,
            "max_ante_cents": max_ante_cents,
            "max_bonus_cents": {wager: config.max_bonus_for(wager) for wager in self.ctx.spec.bonus_wagers},
            "own_max_bonus_cents": dict(config.max_bonus_cents),
        }

    def _set_paytable(self, wager: str, spec: object, by: str) -> None:
        ctx = self.ctx
        if not by.strip():
            ctx.refuse("set_paytable", "by: the manager's name is required", "unknown")
            return
        if wager not in ctx.spec.bonus_wagers:
            ctx.refuse(
                "set_paytable",
                f"wager: {wager!r} is not a bonus wager of {ctx.config.game} "
                f"(bonus wagers: {', '.join(ctx.spec.bonus_wagers)})",
                by,
            )
            return
        try:
            paytable = parse_paytable(spec, field=f"paytables.{wager}")
        except UserError as error:
            ctx.refuse("set_paytable", str(error), by)
            return
        why_not = self.why_not_between_rounds()
        if why_not is not None:
            ctx.refuse("set_paytable", why_not, by)
            return
        # A preset is kept by its name (the settle input takes it as such); custom lines canonically.
        after: str | dict[str, Any] = spec if isinstance(spec, str) else dict(paytable.to_json())
        before = self.paytable_in_effect(wager)
        ctx.replace_config(dataclasses.replace(ctx.config, paytables={**ctx.config.paytables, wager: after}))
        ctx.journal(
            e.PaytableSet(
                wager=wager, by=by, before=before, after=after, config_digest=ctx.config.config_digest
            ),
            source=operator(by),
        )

    def _open_table(self, by: str) -> None:
        ctx = self.ctx
        if not by.strip():
            ctx.refuse("open_table", "by: the manager's name is required", "unknown")
            return
        if self.table_open:
            ctx.refuse("open_table", "the table is already open", by)
            return
        self.table_open = True
        self.closed_reason = None
        ctx.journal(
            e.TableOpened(
                game=ctx.config.game,
                banking_mode=ctx.config.banking_mode,
                config_digest=ctx.config.config_digest,
                by=by,
            ),
            source=operator(by),
        )
        ctx.out.append(ShowText(ctx.config.display_device, "Table open"))

    def _close_table(self, by: str, reason: str) -> None:
        ctx = self.ctx
        if not by.strip():
            ctx.refuse("close_table", "by: the manager's name is required", "unknown")
            return
        if not self.table_open:
            ctx.refuse("close_table", "the table is already closed", by)
            return
        if not reason.strip():
            ctx.refuse("close_table", "reason: a reason is required", by)
            return
        why_not = self.why_not_between_rounds()
        if why_not is not None:
            ctx.refuse("close_table", why_not, by)
            return
        self.table_open = False
        self.closed_reason = reason
        ctx.journal(e.TableClosed(by=by, reason=reason), source=operator(by))
        ctx.out.append(ShowText(ctx.config.display_device, "Table closed"))


def _paytable_json(value: object, wager: str) -> str | dict[str, Any]:
    """A configured paytable as the journal holds it: a preset's name or its lines (the configuration's
    checks admit nothing else; anything else is refused here as the entry's type would refuse it)."""
    if isinstance(value, str | dict):
        return value
    raise e.EntryError(f"journal: paytable_set: paytable of {wager}: {type(value).__name__} is no paytable")


def recovered_config(config: TableConfig, recovered: RecoveredState) -> TableConfig:
    """The configuration the engine starts with: the manager's last limits and paytables, when made
    against this same configuration file; else the file's (a new file since wins: docs/engine.md "The
    manager's settings")."""
    if recovered.settings_config_digest is None or recovered.settings_config_digest != config.config_digest:
        return config
    changes: dict[str, Any] = {}
    if recovered.min_ante_cents is not None and recovered.max_ante_cents is not None:
        changes["min_ante_cents"] = recovered.min_ante_cents
        changes["max_ante_cents"] = recovered.max_ante_cents
    if recovered.max_bonus_cents is not None:
        changes["max_bonus_cents"] = dict(recovered.max_bonus_cents)
    if recovered.paytables:
        changes["paytables"] = {**config.paytables, **recovered.paytables}
    return dataclasses.replace(config, **changes) if changes else config
