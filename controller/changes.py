"""Two-person control of the settings that move money (docs/operations.md "Two-person control").

A manager **proposes** a change (``change_proposed``); it takes effect only when a second, different
manager **approves** it (``change_approved``), between rounds, before it **lapses** (``change_lapsed``,
``[changes] lapse_after_s``). A rejection, a self-approval, an approval during a round or of a lapsed
proposal is journaled as ``change_refused``. The panel (controller/panel/routes/changes.py) and the
command line (`flushtable change`, through the panel's API with each manager's own login) are the two
ways in; the daemon performs every step on its one queue, so an approval and the setting it applies are
one commit.

The kinds of change are a registry, :data:`CHANGE_KINDS`: each names its parameters (a pydantic model:
the panel's body and the CLI's arguments are checked by it), says the change in words and applies it
to the running table through the engine's existing path (an engine action: SetLimits, SetBonusLimit,
SetPaytable), or, for ``config_file``, at the next start (a new configuration file approved before it
is installed: the start's ``config_checked`` matches its digest). A new kind (the progressive
parameters) is one :func:`register_change_kind` call with its model, its words and its apply function.

The state of the proposals is folded from the journal (:func:`fold`, called by the one reducer,
controller/journal/state.py), so a restart keeps them, and the panel reads them like any other state.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from controller.errors import UserError
from controller.journal import entries as e
from controller.journal.chain import canonical_json, format_time_utc
from controller.journal.proposals import CHANGE_ENTRY_KINDS, Proposal, fold
from controller.money import money
from controller.rules.amounts import MAX_AMOUNT_CENTS
from controller.rules.paytables import parse_paytable

if TYPE_CHECKING:
    from controller.engine import TableEngine
    from controller.engine.outputs import Output

SOURCE = "changes"  # the source of the entries the daemon writes for the change control


class Params(BaseModel):
    """A change kind's parameters: unknown fields refused, no coercion (cents are whole numbers)."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


Cents = Annotated[int, Field(ge=1, le=MAX_AMOUNT_CENTS)]
WagerName = Annotated[str, Field(min_length=1, max_length=40, pattern=r"^[a-z_]+$")]


class LimitsParams(Params):
    min_ante_cents: Cents
    max_ante_cents: Cents

    @model_validator(mode="after")
    def _order(self) -> LimitsParams:
        if self.min_ante_cents > self.max_ante_cents:
            raise ValueError(
                f"min_ante_cents: {money(self.min_ante_cents)} is above "
                f"max_ante_cents {money(self.max_ante_cents)}"
            )
        return self


class BonusLimitParams(Params):
    wager: WagerName
    max_cents: Cents


class PaytableParams(Params):
    wager: WagerName
    # A preset's name, or custom lines {"7": 300, ...}: checked now (a proposal that could never apply
    # is refused at once); whether it suits the game's wager is the engine's check at approval.
    spec: Annotated[str, Field(min_length=1, max_length=60, pattern=r"^[A-Za-z0-9_.-]+$")] | dict[str, int]

    @field_validator("spec")
    @classmethod
    def _known(cls, spec: str | dict[str, int]) -> str | dict[str, int]:
        try:
            parse_paytable(spec, field="spec")
        except UserError as error:
            raise ValueError(str(error).removeprefix("spec: ")) from None
        return spec


class ProgressiveParams(Params):
    # The new parameters as the progressive's own parser reads them (controller/progressive): checked
    # there when the change is approved, and refused in its words (a proposal with nonsense never applies).
    parameters: dict[str, Any]


class ConfigFileParams(Params):
    sha256: Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]  # the new file's digest (config_checked's)


Apply = Callable[["TableEngine", BaseModel, str, float], "list[Output]"]


@dataclass(frozen=True, slots=True)
class ChangeKind:
    """One kind of controlled change. ``apply(engine, params, by, now_s)`` makes it take effect on the
    running table and returns the engine's outputs (a ``Refused`` among them: it did not); None: it
    takes effect at the next start (``config_file``)."""

    name: str
    label: str
    params: type[BaseModel]
    describe: Callable[[Any], str]
    apply: Apply | None


CHANGE_KINDS: dict[str, ChangeKind] = {}


def register_change_kind(kind: ChangeKind) -> None:
    """Add a kind of controlled change (a kind's name once)."""
    if kind.name in CHANGE_KINDS:
        raise ValueError(f"change kind {kind.name!r} is registered twice")
    CHANGE_KINDS[kind.name] = kind


def via_engine_action(build: Callable[[Any, str], object]) -> Apply:
    """An ``apply`` that hands the engine one action (built from the parameters and the approver)."""

    def apply(engine: TableEngine, params: BaseModel, by: str, now_s: float) -> list[Output]:
        return engine.handle(build(params, by), now_s)

    return apply


def _register_builtin() -> None:
    from controller.engine.actions import (  # noqa: PLC0415 (cycle)
        SetBonusLimit,
        SetLimits,
        SetPaytable,
        SetProgressiveParameters,
    )

    register_change_kind(
        ChangeKind(
            "limits",
            "Ante limits",
            LimitsParams,
            lambda p: f"ante limits {money(p.min_ante_cents)} to {money(p.max_ante_cents)}",
            via_engine_action(lambda p, by: SetLimits(p.min_ante_cents, p.max_ante_cents, by)),
        )
    )
    register_change_kind(
        ChangeKind(
            "bonus_limit",
            "A bonus wager's maximum",
            BonusLimitParams,
            lambda p: f"{p.wager} maximum {money(p.max_cents)}",
            via_engine_action(lambda p, by: SetBonusLimit(p.wager, p.max_cents, by)),
        )
    )
    register_change_kind(
        ChangeKind(
            "paytable",
            "A bonus wager's paytable",
            PaytableParams,
            lambda p: f"{p.wager} paytable {p.spec if isinstance(p.spec, str) else canonical_json(p.spec)}",
            via_engine_action(lambda p, by: SetPaytable(p.wager, p.spec, by)),
        )
    )
    register_change_kind(
        ChangeKind(
            "progressive",
            "The Progressive's parameters (the meter's model: base, rates, limit, unit, ...)",
            ProgressiveParams,
            lambda p: f"progressive parameters {canonical_json(p.parameters)}",
            # The progressive's one function for a change (controller/progressive/parameters.py, through
            # the engine's SetProgressiveParameters): a manager's, between rounds; it checks them again.
            via_engine_action(
                lambda p, by: SetProgressiveParameters(
                    p.parameters, by, "manager", "approved two-person change"
                )
            ),
        )
    )
    register_change_kind(
        ChangeKind(
            "config_file",
            "A new configuration file (rake, banking mode, bonus cap, anything in the file)",
            ConfigFileParams,
            lambda p: f"configuration file sha256 {p.sha256[:16]}… (takes effect at the next start)",
            None,
        )
    )


_register_builtin()


class ChangeRefusedError(Exception):
    """A change step the table refused: one line (the panel answers 409, the CLI prints it)."""


def check_params(change_kind: str, params: Mapping[str, Any]) -> BaseModel:
    """The parameters as the kind's model, or ChangeRefusedError naming the first problem."""
    kind = CHANGE_KINDS.get(change_kind)
    if kind is None:
        raise ChangeRefusedError(
            f"change_kind: {change_kind!r} is not one of {', '.join(sorted(CHANGE_KINDS))}"
        )
    try:
        return kind.params.model_validate(dict(params))
    except ValidationError as error:
        first = error.errors()[0]
        message = str(first["msg"]).removeprefix("Value error, ")
        where = ".".join(str(part) for part in first["loc"])
        raise ChangeRefusedError(f"{where}: {message}" if where else message) from None


def _utc(seconds: float) -> str:
    return format_time_utc(datetime.fromtimestamp(seconds, UTC))


def _record(entry: e.Entry) -> Output:
    from controller.engine.outputs import JournalRecord  # noqa: PLC0415 (the engine imports this module's users)

    return JournalRecord.typed(entry, None, SOURCE)


def _lapsed(proposal: Proposal) -> Output:
    return _record(
        e.ChangeLapsed(
            change_id=proposal.change_id,
            change_kind=proposal.change_kind,
            proposed_by=proposal.proposed_by,
            lapses_utc=proposal.lapses_utc,
        )
    )


class ChangeControl:
    """The steps, each returning the outputs to commit (journal records first; a ``Refused`` when the
    step was refused). Run on the daemon's queue; ``proposals`` is the state folded from the journal,
    kept current by folding each record this returns (:meth:`adopt`)."""

    def __init__(self, table_id: str, proposals: Mapping[str, Proposal], *, lapse_after_s: float) -> None:
        self.table_id = table_id
        self.proposals: dict[str, Proposal] = dict(proposals)
        self.lapse_after_s = lapse_after_s
        self._count = max((_number(cid) for cid in self.proposals), default=0)

    def adopt(self, outputs: Sequence[Output], now_s: float) -> None:
        """Fold the change records among ``outputs`` (about to be committed) into the state."""
        from controller.engine.outputs import JournalRecord  # noqa: PLC0415

        for output in outputs:
            if isinstance(output, JournalRecord) and output.kind in CHANGE_ENTRY_KINDS:
                fold(self.proposals, output.entry, _utc(now_s))

    def pending(self) -> list[Proposal]:
        return [p for p in self.proposals.values() if p.status == "pending"]

    def _refused(self, change_id: str | None, by: str, reason: str, *, closed: bool) -> list[Output]:
        from controller.engine.outputs import Refused  # noqa: PLC0415

        record = _record(e.ChangeRefused(change_id=change_id, by=by, reason=reason, closed=closed))
        return [record, Refused("change", reason)]

    def propose(
        self, change_kind: str, params: Mapping[str, Any], by: str, reason: str, now_s: float
    ) -> list[Output]:
        try:
            checked = check_params(change_kind, params)
        except ChangeRefusedError as error:
            return self._refused(None, by, str(error), closed=True)
        self._count += 1
        change_id = f"C{self.table_id}-{self._count:04d}"
        proposed = e.ChangeProposed(
            change_id=change_id,
            change_kind=change_kind,
            params=checked.model_dump(),
            summary=CHANGE_KINDS[change_kind].describe(checked),
            by=by,
            reason=reason,
            lapses_utc=_utc(now_s + self.lapse_after_s),
        )
        return [_record(proposed)]

    def lapse_due(self, now_s: float) -> list[Output]:
        """``change_lapsed`` for every pending proposal past its time."""
        now_utc = _utc(now_s)
        return [_lapsed(p) for p in self.pending() if p.lapses_utc <= now_utc]

    def approve(self, engine: TableEngine, change_id: str, by: str, now_s: float) -> list[Output]:
        """The second manager's approval: refused (journaled) for the proposer, a lapsed or closed
        proposal, or a round in play; else the change applied and ``change_approved`` beside it."""
        proposal = self.proposals.get(change_id)
        if proposal is None:
            return self._refused(change_id, by, f"no proposal {change_id}", closed=False)
        if proposal.status != "pending":
            return self._refused(change_id, by, f"{change_id} is {proposal.status}", closed=False)
        if proposal.lapses_utc <= _utc(now_s):
            why = f"{change_id} lapsed at {proposal.lapses_utc}; it never applies"
            return [_lapsed(proposal), *self._refused(change_id, by, why, closed=False)]
        if by == proposal.proposed_by:
            why = f"{by} proposed {change_id}; a second, different manager must approve it"
            return self._refused(change_id, by, why, closed=False)
        kind = CHANGE_KINDS.get(proposal.change_kind)
        if kind is None:  # a kind registered when it was proposed, gone since (a downgrade)
            why = f"this release does not know change kind {proposal.change_kind!r}"
            return self._refused(change_id, by, why, closed=True)
        approved = _record(
            e.ChangeApproved(
                change_id=change_id,
                change_kind=proposal.change_kind,
                proposed_by=proposal.proposed_by,
                by=by,
                summary=proposal.summary,
            )
        )
        if kind.apply is None:
            return [approved]
        not_now = engine.why_not_between_rounds()
        if not_now is not None:
            return self._refused(change_id, by, f"{not_now}", closed=False)
        outputs = kind.apply(engine, kind.params.model_validate(proposal.params), by, now_s)
        from controller.engine.outputs import Refused  # noqa: PLC0415

        refused = [o for o in outputs if isinstance(o, Refused)]
        if refused:
            why = f"not applied: {refused[0].reason}"
            return [*outputs, *self._refused(change_id, by, why, closed=True)]
        return [approved, *outputs]

    def reject(self, change_id: str, by: str, reason: str) -> list[Output]:
        """Any manager (the proposer too: a withdrawal) closes a pending proposal; it never applies."""
        proposal = self.proposals.get(change_id)
        if proposal is None or proposal.status != "pending":
            status = "unknown" if proposal is None else proposal.status
            return self._refused(change_id, by, f"{change_id} is {status}", closed=False)
        return [_record(e.ChangeRefused(change_id=change_id, by=by, reason=reason, closed=True))]


def _number(change_id: str) -> int:
    tail = change_id.rpartition("-")[2]
    return int(tail) if tail.isdigit() else 0


# --- the configuration file at start ---------------------------------------------------------------------
def flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    """``{"limits": {"min_ante_cents": 500}}`` as ``{"limits.min_ante_cents": 500}`` (lists kept whole)."""
    if not isinstance(value, Mapping) or not value:
        return {prefix: value} if prefix else {}
    flat: dict[str, Any] = {}
    for key, item in value.items():
        flat.update(flatten(item, f"{prefix}.{key}" if prefix else str(key)))
    return flat


def _shown(value: Any) -> str:
    text = canonical_json(value) if not isinstance(value, str) else value
    return text if len(text) <= 120 else text[:117] + "..."


def settings_difference(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[str]:
    """One line per setting added, removed or changed, in key order."""
    lines = []
    for key in sorted(set(before) | set(after)):
        if key not in before:
            lines.append(f"{key}: (none) -> {_shown(after[key])}")
        elif key not in after:
            lines.append(f"{key}: {_shown(before[key])} -> (none)")
        elif before[key] != after[key]:
            lines.append(f"{key}: {_shown(before[key])} -> {_shown(after[key])}")
    return lines


@dataclass(frozen=True, slots=True)
class ConfigCheck:
    entry: e.ConfigChecked  # what the start journals
    alert: str | None  # the config_changed alert's words, when changed with no approved change


def check_configuration(
    *,
    source: str,
    file_sha256: str | None,
    config_digest: str,
    settings: Mapping[str, Any],
    previous: e.ConfigChecked | None,
    approved_files: Mapping[str, str],
) -> ConfigCheck:
    """The start's configuration check against the last start's (None: the journal's first)."""
    flat = flatten(settings)
    if previous is None:
        initial = e.ConfigChecked(
            source=source,
            file_sha256=file_sha256,
            config_digest=config_digest,
            previous_file_sha256=None,
            previous_config_digest=None,
            settings=flat,
            changed=[],
        )
        return ConfigCheck(initial, None)
    changed = settings_difference(previous.settings, flat)
    file_changed = file_sha256 != previous.file_sha256
    if file_changed and not changed:
        changed = ["the file's text changed; the effective settings did not"]
    approved = approved_files.get(file_sha256) if file_sha256 is not None and file_changed else None
    unapproved = (file_changed or config_digest != previous.config_digest) and approved is None
    checked = e.ConfigChecked(
        source=source,
        file_sha256=file_sha256,
        config_digest=config_digest,
        previous_file_sha256=previous.file_sha256,
        previous_config_digest=previous.config_digest,
        settings=flat,
        changed=changed,
        approved_change=approved,
        unapproved=unapproved,
    )
    alert = None
    if unapproved:
        first = "; ".join(changed[:3]) + (f" (and {len(changed) - 3} more)" if len(changed) > 3 else "")
        alert = f"the configuration {source} changed since the last start with no approved change: {first}"
    return ConfigCheck(checked, alert)


# --- the desk: each step on the table's one queue ---------------------------------------------------------
Work = Callable[["TableEngine", float], "list[Output]"]
RunOnQueue = Callable[[Work], Awaitable["list[Output]"]]


class ChangeDesk:
    """The change control as the panel and the daemon use it: each step is ``run`` on the table's one
    queue (the daemon's; in tests an engine called directly), its outputs committed before it returns;
    a refused step raises ChangeRefusedError with its reason (already journaled)."""

    def __init__(self, control: ChangeControl, run: RunOnQueue) -> None:
        self.control = control
        self._run = run

    async def _step(self, step: Callable[[TableEngine, float], list[Output]]) -> list[Output]:
        def work(engine: TableEngine, now_s: float) -> list[Output]:
            outputs = step(engine, now_s)
            self.control.adopt(outputs, now_s)
            return outputs

        outputs = await self._run(work)
        from controller.engine.outputs import Refused  # noqa: PLC0415

        refused = [o for o in outputs if isinstance(o, Refused)]
        if refused:
            raise ChangeRefusedError(refused[-1].reason)
        return outputs

    async def propose(self, change_kind: str, params: Mapping[str, Any], by: str, reason: str) -> str:
        """The new proposal's change_id."""
        outputs = await self._step(
            lambda _engine, now_s: self.control.propose(change_kind, params, by, reason, now_s)
        )
        from controller.engine.outputs import JournalRecord  # noqa: PLC0415

        for output in outputs:
            if isinstance(output, JournalRecord) and isinstance(output.entry, e.ChangeProposed):
                return output.entry.change_id
        raise ChangeRefusedError("the proposal was not journaled")

    async def approve(self, change_id: str, by: str) -> None:
        await self._step(lambda engine, now_s: self.control.approve(engine, change_id, by, now_s))

    async def reject(self, change_id: str, by: str, reason: str) -> None:
        await self._step(lambda _engine, _now_s: self.control.reject(change_id, by, reason))

    async def lapse_due(self) -> None:
        await self._step(lambda _engine, now_s: self.control.lapse_due(now_s))


__all__ = [
    "CHANGE_ENTRY_KINDS",
    "CHANGE_KINDS",
    "ChangeControl",
    "ChangeDesk",
    "ChangeKind",
    "Proposal",
    "fold",
]
