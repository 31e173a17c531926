"""The Progressive wager at the table (docs/rules.md "Progressive: the controller", docs/engine.md).

The engine's part that speaks to the progressive controller (controller/progressive/). Stand-alone, the
controller's store is this table's journal: its entries go out as the engine's journal records, in the
same output batch as the round entries they follow (the shell appends every record before it acts on
the commands after it), and a restart folds them back (``RecoveredState.progressive``).

- The progressive spot is the spot after the game's wagers (``TableContext.spot_wagers``), sensed like
  every spot; at the lock every seat's Progressive wager must be exactly the unit (else the lock is
  refused like an over-limit bet). With the link down (``link_state()``, a linked table's client) the
  Progressive wagers are refused at the lock, the reason on the display, and the rest of the round
  plays: the dealer gives those chips back (their spot is not watched for past-posting).
- At the settlement the round's settled Progressive wagers are contributed, then its hits claimed in
  the settlement order: the amounts are frozen (the jackpot lock) and the meter re-seeds at once. A
  fixed award is paid in the round; a meter award (or one at the sign-off) waits for a supervisor's
  ConfirmProgressiveAward on the panel, the round going on meanwhile, the award shown pending.
- A claim the controller could not answer (``ProgressiveUnavailable``, a linked table's lost link) stays
  pending at the table and is asked again on every tick until answered: the claim is keyed by
  (table, round), so asking again can never pay twice.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from controller.engine import actions as a
from controller.engine import machine as m
from controller.engine.context import ENGINE, TableContext, operator
from controller.engine.outputs import JournalRecord
from controller.errors import UserError
from controller.journal import entries as e
from controller.money import money
from controller.progressive.controller import (
    ConfirmationSent,
    LinkState,
    ProgressiveController,
    TableSideProgressive,
)

# Re-exported: its first home, still imported from here by a linked table's controller.
from controller.progressive.controller import ProgressiveUnavailable as ProgressiveUnavailable  # noqa: PLC0414
from controller.progressive.model import Hit, MeterState, ProgressiveParameters, parse_parameters
from controller.progressive.parameters import change_progressive_parameters
from controller.rules.progressive import (
    PROGRESSIVE,
    PROGRESSIVE_PRESETS,
    ProgressiveResult,
    ProgressiveSettings,
)
from drivers.events import ShowText


class _EngineStore:
    """The stand-alone store as the engine sees it: committing is handing the entries to the shell as
    journal records (appended before any command that follows them); loading is done by the journal's
    recovery (``RecoveredState.progressive``)."""

    def __init__(self, ctx: TableContext) -> None:
        self.ctx = ctx

    def load(self) -> list[e.Entry]:
        return []

    def commit(self, entries: Sequence[e.Entry]) -> None:
        for entry in entries:
            round_id = getattr(entry, "round_id", None)
            by = getattr(entry, "by", None)
            person = isinstance(by, str) and by not in ("engine", "config", "daemon")
            source = operator(by) if person and isinstance(by, str) else "progressive"
            self.ctx.out.append(
                JournalRecord(entry.kind, entry, round_id if isinstance(round_id, str) else None, source)
            )


@dataclass(slots=True)
class _WaitingClaim:
    """A claim the controller did not answer yet: asked again on every tick."""

    round_id: str
    wagers: int
    hits: tuple[Hit, ...]


def settle_object(parameters: ProgressiveParameters, meter_cents: int, reserve_cents: int) -> dict[str, Any]:
    """The settle input's ``progressive`` (docs/settle.md): the rules' parameters and the meter."""
    settings = parameters.settings
    preset = PROGRESSIVE_PRESETS.get(settings.paytable.name)
    obj = {key: value for key, value in settings.to_json().items() if key != "paytable_name"}
    if preset is not None and preset == settings.paytable:
        obj["paytable"] = preset.name
    if obj.get("limit_cents") is None:
        obj.pop("limit_cents", None)
    return {**obj, "meter_cents": meter_cents, "reserve_cents": reserve_cents}


class TableProgressive:
    """The engine's Progressive part (None of it runs when the table offers no Progressive wager)."""

    def __init__(self, ctx: TableContext, parameters: ProgressiveParameters | None, state: object) -> None:
        self.ctx = ctx
        self.parameters = parameters  # the configuration file's
        self.controller: TableSideProgressive | None = None
        if parameters is not None:
            recovered = state if isinstance(state, MeterState) else MeterState()
            self.controller = ProgressiveController(_EngineStore(ctx), state=recovered)
        # The link's state: stand-alone, the controller's own (always up); a linked table's client sets
        # its own (controller/engine/engine.py ``TableEngine.set_progressive_controller``).
        self.link: Callable[[], LinkState] = (
            self.controller.link_state if self.controller is not None else lambda: LinkState(True)
        )
        self.refused_at_lock: str | None = None  # this round's Progressive wagers refused: why
        self._file_refused = False  # the configuration file's parameters were refused (said once)
        self.waiting: list[_WaitingClaim] = []

    @property
    def offered(self) -> bool:
        return self.controller is not None

    def handlers(self) -> dict[type, Callable[[Any], None]]:
        return {
            a.ConfirmProgressiveAward: self._confirm,
            a.SetProgressiveParameters: self._set_parameters,
        }

    # ------------------------------------------------------------------ the meter's parameters
    def _sync_parameters(self) -> None:
        """Open the meter at its base the first time, and record a change of the configuration file
        (a deliberate change, like a new file's limits) between rounds; a manager's later change
        stands until the file changes again. A file's parameters the meter refuses (a limit below the
        meter as it stands) are said once, as an alert, and the meter keeps its own."""
        controller = self.controller
        if controller is None or self.parameters is None:
            return
        state = controller.state
        if not state.opened:
            controller.open_now(self.ctx.config.table_id, self.parameters, by="config")
            return
        if self.parameters not in (state.config_parameters, state.parameters) and not self._file_refused:
            try:
                controller.change_parameters_now(self.parameters, by="config", reason="configuration file")
            except UserError as error:
                self._file_refused = True
                self.ctx.alert(
                    "alert",
                    "progressive_parameters_refused",
                    f"the configuration's progressive parameters are refused ({error}); "
                    "the meter keeps its own",
                    table_wide=True,
                )

    def betting_opened(self) -> str:
        """Betting opens (between rounds): bring the meter's parameters up to date; the display's words."""
        self._sync_parameters()
        return self.display_meter()

    def _set_parameters(self, action: a.SetProgressiveParameters) -> None:
        ctx = self.ctx
        if self.controller is None:
            ctx.refuse("set_progressive", "this table offers no Progressive wager", action.by)
            return
        in_play = ctx.where != m.IDLE  # betting open counts: the lock would check the old unit
        try:
            if not in_play:
                self._sync_parameters()  # a meter never opened opens first, between rounds only
            change_progressive_parameters(
                self.controller,
                dict(action.parameters),
                by=action.by,
                role=action.role,
                round_in_play=in_play,
                reason=action.reason,
            )
        except UserError as error:
            ctx.refuse("set_progressive", str(error), action.by)

    # ------------------------------------------------------------------ the lock
    def at_lock(self, wagers_by_seat: dict[int, dict[str, int]]) -> str | None:
        """Check the Progressive wagers at the lock: the reason the lock is refused (a wrong amount on
        the spot), or None. With the link down the wagers are taken out of the round (refused, the
        reason kept for the display), and the lock goes on."""
        self.refused_at_lock = None
        have = {seat: wagers[PROGRESSIVE] for seat, wagers in wagers_by_seat.items() if PROGRESSIVE in wagers}
        if not have:
            return None
        if self.controller is None:
            return f"seat {min(have)}: this table offers no Progressive wager"
        unit = self.current_parameters().settings.unit_cents
        for seat, amount in sorted(have.items()):
            if amount != unit:
                return (
                    f"seat {seat} progressive: must be exactly the unit ({money(unit)}), not {money(amount)} "
                    f"(the Progressive wager is a fixed amount)"
                )
        link = self.link()
        if not link.up:
            self.refused_at_lock = link.reason or "the progressive's link is down"
            for seat in have:
                del wagers_by_seat[seat][PROGRESSIVE]
        return None

    def current_parameters(self) -> ProgressiveParameters:
        assert self.controller is not None
        assert self.parameters is not None
        return self.controller.state.parameters or self.parameters

    def after_lock(self) -> None:
        """The round is locked: open (or bring up to date) the meter before its first contribution;
        say on the display that the Progressive wagers were refused, when they were."""
        ctx = self.ctx
        if self.controller is None:
            return
        self._sync_parameters()
        if self.refused_at_lock is not None:
            reason = self.refused_at_lock
            ctx.journal(e.ProgressiveRefusedAtLock(by=ENGINE, reason=reason))
            ctx.alert("alert", "progressive_refused", f"Progressive wagers refused at the lock: {reason}")
            ctx.out.append(
                ShowText(ctx.config.display_device, f"Progressive closed: {reason}. Return the chips"[:120])
            )

    # ------------------------------------------------------------------ the settle input
    def settle_object(self) -> dict[str, Any] | None:
        if self.controller is None:
            return None
        state = self.controller.state
        return settle_object(self.current_parameters(), state.meter_cents, state.reserve_cents)

    # ------------------------------------------------------------------ the settlement
    def after_settlement(self, round_id: str, result: ProgressiveResult | None) -> None:
        """Contribute the round's settled wagers and claim its hits in the settlement's order."""
        if self.controller is None or result is None or result.wagers_settled == 0:
            return
        hits = tuple(Hit(award.seat, award.line) for award in result.awards)
        self._ask(_WaitingClaim(round_id, result.wagers_settled, hits))

    def _ask(self, claim: _WaitingClaim) -> bool:
        ctx = self.ctx
        controller = self.controller
        assert controller is not None
        table_id = ctx.config.table_id
        try:
            controller.contribute_now(table_id, claim.round_id, claim.wagers)
            if not claim.hits:
                return True
            answer = controller.claim_now(table_id, claim.round_id, claim.hits)
        except ProgressiveUnavailable as error:
            if claim not in self.waiting:
                self.waiting.append(claim)
                ctx.alert("alert", "progressive_claim_pending", f"Progressive claim pending: {error}")
            return False
        except UserError as error:  # a refusal: said, journaled, never a crash of the round
            ctx.refuse("progressive_claim", str(error), ENGINE)
            self._answered(claim, f"refused: {error}")
            return True
        self._answered(
            claim,
            "; ".join(
                f"award {award.claimed.award_id} seat {award.claimed.seat} "
                f"{money(award.claimed.amount_cents)}"
                + (" pending a supervisor" if award.pending else " paid")
                for award in answer.awards
            )
            + (" (the floor's first answer, replayed)" if answer.replayed else ""),
        )
        for award in answer.awards:
            claimed = award.claimed
            words = (
                f"Progressive seat {claimed.seat}: {money(claimed.amount_cents)}"
                + (" pending a supervisor" if award.pending else " paid")
                + (" (answered before)" if answer.replayed else "")  # a restart's replay: not a new win
                + f". Meter {money(controller.state.meter_cents)}"
            )
            ctx.out.append(ShowText(ctx.config.display_device, words[:120]))
            if award.pending:
                ctx.alert(
                    "alert",
                    "progressive_award_pending",
                    f"Progressive award {claimed.award_id}: {money(claimed.amount_cents)} "
                    "awaits a supervisor",
                    table_wide=True,
                )
        return True

    def _answered(self, claim: _WaitingClaim, detail: str) -> None:
        """A linked table records that the floor answered the claim (the round's own entry): a restart
        asks again every claim of its journal without one (docs/floor.md "Linked progressive").
        Stand-alone the controller's own entries (progressive_award_claimed) are the record."""
        if isinstance(self.controller, ProgressiveController):
            return
        self.ctx.journal(
            e.LinkedClaimAnswered(by=ENGINE, answer=detail),
            round_id=claim.round_id,
        )

    def resume_claims(self, claims: Sequence[tuple[str, int, Sequence[Hit]]]) -> None:
        """At a start: the claims the journal shows unanswered (round, settled wagers, hits), waiting
        again (asked on the next tick, the same (table, round) key: a replay is paid once)."""
        known = {claim.round_id for claim in self.waiting}
        for round_id, wagers, hits in claims:
            if round_id in known:
                continue
            self.waiting.append(_WaitingClaim(round_id, wagers, tuple(hits)))
            self.ctx.alert(
                "alert",
                "progressive_claim_pending",
                f"Progressive claim pending: round {round_id}'s claim had no answer before the restart; "
                "asked again",
                table_wide=True,
            )

    def tick(self) -> None:
        """Ask again for every claim not answered yet (the link came back)."""
        for claim in list(self.waiting):
            if self._ask(claim):
                self.waiting.remove(claim)

    def _confirm(self, action: a.ConfirmProgressiveAward) -> None:
        ctx = self.ctx
        if self.controller is None:
            ctx.refuse("confirm_progressive_award", "this table offers no Progressive wager", action.by)
            return
        try:
            answer = self.controller.confirm_paid_now(action.award_id, by=action.by)
        except ConfirmationSent as sent:  # a linked award: the floor records it; journaled as sent
            ctx.journal(
                e.LinkedConfirmationSent(by=action.by, message=str(sent), award_id=action.award_id),
                source=operator(action.by),
                table_wide=True,
            )
            ctx.out.append(
                ShowText(ctx.config.display_device, f"Progressive award {action.award_id}: sent"[:120])
            )
            return
        except UserError as error:
            ctx.refuse("confirm_progressive_award", str(error), action.by)
            return
        if answer.replayed:
            paid = answer.award.paid
            ctx.refuse(
                "confirm_progressive_award",
                f"award {action.award_id} was already paid (confirmed by {paid.by if paid else '?'}); "
                f"nothing is paid twice",
                action.by,
            )
            return
        claimed = answer.award.claimed
        words = (
            f"Pay progressive seat {claimed.seat}: {money(claimed.amount_cents)} (confirmed by {action.by})"
        )
        ctx.out.append(ShowText(ctx.config.display_device, words[:120]))

    # ------------------------------------------------------------------ what the table shows
    def display_meter(self) -> str:
        """The meter as the dealer's display says it at the opening of betting."""
        if self.controller is None:
            return ""
        link = self.link()
        if not link.up:
            return f" · Progressive closed: {link.reason}"
        state = self.controller.state
        meter = state.meter_cents if state.opened else self.current_parameters().settings.base_cents
        return f" · Progressive {money(meter)}"


def progressive_parameters_of(raw: object) -> ProgressiveParameters | None:
    """The engine's ``TableConfig.progressive`` as parameters: given as parameters, as the rules'
    settings alone (the controller's own parameters at their defaults), or as a JSON object."""
    if raw is None or isinstance(raw, ProgressiveParameters):
        return raw
    if isinstance(raw, ProgressiveSettings):
        return ProgressiveParameters(raw)
    if isinstance(raw, Mapping):
        return parse_parameters(raw)
    raise TypeError(f"progressive: parameters, settings or an object, not {type(raw).__name__}")
