"""The records the one reducer's state is made of (controller/journal/state.py ``TableState``): a round
(``RoundState``, with when its cards may be shown), a fault or alert, a device, the meters; and what a
stored entry offers the fold (``Stored``). Each changes only as the reducer folds entries into it."""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol, cast

from controller import phases as m
from controller.journal.chain import Placed
from controller.journal.kinds import (
    FAULT_CLEARED,
    FAULT_RAISED,
    METER_KINDS,
    ROUND_STARTED,
    STATUS_BY_CLOSING_KIND,
)
from controller.rules.games import GAMES
from table_names import COMMUNITY_POSITION as COMMUNITY_POSITION  # noqa: PLC0414  (re-exported)
from table_names import DEALER_POSITION as DEALER_POSITION  # noqa: PLC0414  (re-exported)
from table_names.records import Record

if TYPE_CHECKING:
    # The classes name what the records hold; the fold reads entries by attribute and kind, typed or
    # their views (controller/journal/state.py ``TableState``), and loads no classes itself.
    from controller.journal import closing_entries
    from controller.journal import entries as e
    from controller.journal.entry_view import EntryView

# The states that mean the cards were turned. Not ``complete``: a void (a supervisor's, recovery's)
# moves the round there from anywhere, and a round's end is not its reveal (issue 22). A settled round
# passed through ``reveal`` on its way to ``complete``.
REVEAL_STATES = frozenset({m.REVEAL, m.SETTLING, m.PAYING})
# Chase the Flush: how many community cards are face up in each street's decision state.
COMMUNITY_TURNED: dict[str, int] = {m.FLOP: 2, m.RIVER: 4}
HISTORY_ROUNDS = 40  # the panel's meter chart: the last settled rounds
WAGERING_ACTIONS = frozenset({"raise", "play", "all_in"})


def resolve_typed_annotations() -> None:
    """Make the records' annotations resolvable at run time: they name the typed entries
    (``e.Decision``, ``e.Reason``), which this module imports for type checking only (a reader that folds
    through views loads no typed classes). A reader that converts records by their annotations (the seal's
    checkpoint, by msgspec: controller/journal/checkpoint.py) calls this first; it loads the classes."""
    from controller.journal import entries  # noqa: PLC0415 - the caller's: it converts typed records

    globals().setdefault("e", entries)


class Stored(Placed, Protocol):
    """A stored entry's place with its typed entry (JournalEntry and store.Replayed have these)."""

    @property
    def entry(self) -> e.Entry: ...


# --- rounds -------------------------------------------------------------------------------------


class RoundState(Record):
    """One round as the fold leaves it: its wagers, cards, decisions, dead seats, reveal and closing."""

    round_id: str
    started_seq: int
    started_utc: str
    game: str
    banking: dict[str, Any]
    button_seat: int | None
    seats: list[int]
    phase: str
    sensed_wagers: dict[int, dict[str, int]]  # what the sensors read
    locked_wagers: dict[int, dict[str, int]] | None  # None: bets never locked
    cards: dict[int, dict[int, str | None]]  # position -> index -> code
    decisions: dict[int, list[e.Decision]]
    dead_seats: set[int]
    reached_reveal: bool
    community_visible: int
    status: str  # or settled | dead | void
    closed_seq: int | None
    closed_utc: str
    settlement: dict[str, Any] | None  # the public settlement (no hands)
    faults: list[str]
    refused_seat: int | None  # the seat of the last decision_refused (its fault follows it)
    over_limit_alerts: dict[int, list[str]]  # seat -> open fault ids
    # The dealer's kill request waiting for a supervisor (kill_seat_request "requested"), or None: its
    # seat, its round, its number in the round, who asked, when. Answered (confirmed, rejected), lapsed
    # or the round closed: None.
    kill_request: dict[str, Any] | None
    kill_requests_made: int  # the round's "requested" entries: numbers the older ones, which had none

    __slots__ = tuple(__annotations__)  # the fields declared above, in order

    def __init__(  # noqa: PLR0913, PLR0917 - a round's every part, as the fold and a checkpoint give them
        self,
        round_id: str,
        started_seq: int = 0,
        started_utc: str = "",
        game: str = "",
        banking: dict[str, Any] | None = None,
        button_seat: int | None = None,
        seats: list[int] | None = None,
        phase: str = "",
        sensed_wagers: dict[int, dict[str, int]] | None = None,
        locked_wagers: dict[int, dict[str, int]] | None = None,
        cards: dict[int, dict[int, str | None]] | None = None,
        decisions: dict[int, list[e.Decision]] | None = None,
        dead_seats: set[int] | None = None,
        reached_reveal: bool = False,
        community_visible: int = 0,
        status: str = "in_progress",
        closed_seq: int | None = None,
        closed_utc: str = "",
        settlement: dict[str, Any] | None = None,
        faults: list[str] | None = None,
        refused_seat: int | None = None,
        over_limit_alerts: dict[int, list[str]] | None = None,
        kill_request: dict[str, Any] | None = None,
        kill_requests_made: int = 0,
    ) -> None:
        self.round_id = round_id
        self.started_seq = started_seq
        self.started_utc = started_utc
        self.game = game
        self.banking = {} if banking is None else banking
        self.button_seat = button_seat
        self.seats = [] if seats is None else seats
        self.phase = phase
        self.sensed_wagers = {} if sensed_wagers is None else sensed_wagers
        self.locked_wagers = locked_wagers
        self.cards = {} if cards is None else cards
        self.decisions = {} if decisions is None else decisions
        self.dead_seats = set() if dead_seats is None else dead_seats
        self.reached_reveal = reached_reveal
        self.community_visible = community_visible
        self.status = status
        self.closed_seq = closed_seq
        self.closed_utc = closed_utc
        self.settlement = settlement
        self.faults = [] if faults is None else faults
        self.refused_seat = refused_seat
        self.over_limit_alerts = {} if over_limit_alerts is None else over_limit_alerts
        self.kill_request = kill_request
        self.kill_requests_made = kill_requests_made

    # --- what recovery needs of an interrupted round -----------------------------------------
    @property
    def open(self) -> bool:
        return self.status == "in_progress"

    @property
    def dp_seat(self) -> int | None:
        seat = self.banking.get("seat") if self.banking.get("mode") == "designated-player" else None
        return seat if isinstance(seat, int) else None

    def wagers(self) -> dict[int, dict[str, int]]:
        """Every wager the round holds, by seat: the locked wagers plus each raise, play or all-in
        already decided. A void returns all of them."""
        wagers = {seat: dict(seat_wagers) for seat, seat_wagers in (self.locked_wagers or {}).items()}
        if self.locked_wagers is None:
            return wagers
        spec = GAMES.get(self.game)
        for seat, decisions in self.decisions.items():
            for decision in decisions:
                if decision.action not in WAGERING_ACTIONS or decision.amount_cents <= 0:
                    continue
                wager = spec.decision_wager if spec is not None else decision.action
                wagers.setdefault(seat, {})[wager] = decision.amount_cents
        return wagers

    def street_of(self, seat: int) -> str | None:
        """Chase the Flush: the street of the seat's all-in (the settle input wants it)."""
        for decision in reversed(self.decisions.get(seat, [])):
            if decision.action in WAGERING_ACTIONS and decision.street is not None:
                return decision.street
        return None

    def folded(self, seat: int) -> bool:
        """The seat folded and put nothing on the decision spot."""
        decisions = self.decisions.get(seat, [])
        return any(d.action == "fold" for d in decisions) and not any(
            d.action in WAGERING_ACTIONS for d in decisions
        )

    # --- what may be shown ----------------------------------------------------------------------
    @property
    def cards_public(self) -> bool:
        """The round's cards are revealed (a dead hand's excepted): only by a reveal that happened
        (never by the round's end: a round voided before its reveal keeps them private for good), and
        never for a dead round."""
        return self.status != "dead" and self.reached_reveal

    def seat_dead(self, seat: int) -> bool:
        """Nothing about this seat's hand is ever shown: its hand is dead, or the whole round is."""
        return self.status == "dead" or seat in self.dead_seats

    def card_visible(self, position: int, index: int) -> bool:
        if self.seat_dead(position):
            return False
        if self.cards_public:
            return True
        # Chase the Flush: a street's community cards were turned in front of everyone; a void after
        # it keeps those (and only those) shown.
        return position == COMMUNITY_POSITION and index < self.community_visible


# --- faults and devices -------------------------------------------------------------------------


class AlertState(Record):
    """A raised fault: who raised, acknowledged, cleared or resolved it, and when."""

    fault_id: str
    kind: str
    severity: str
    reason: e.Reason
    device: str | None
    round_id: str | None
    raised_seq: int
    raised_utc: str
    raised_by: str | None
    acknowledged_by: str | None
    acknowledged_utc: str | None
    cleared_by: str | None
    cleared_reason: str | None
    cleared_utc: str | None
    # Resolved by itself: its cause was corrected before the round went on (docs/panel.md "Alerts").
    resolved_utc: str | None
    resolved_note: str | None

    __slots__ = tuple(__annotations__)  # the fields declared above, in order

    def __init__(  # noqa: PLR0913, PLR0917 - a fault's every part, as the fold and a checkpoint give them
        self,
        fault_id: str,
        kind: str,
        severity: str,
        reason: e.Reason,
        device: str | None,
        round_id: str | None,
        raised_seq: int,
        raised_utc: str,
        raised_by: str | None = None,
        acknowledged_by: str | None = None,
        acknowledged_utc: str | None = None,
        cleared_by: str | None = None,
        cleared_reason: str | None = None,
        cleared_utc: str | None = None,
        resolved_utc: str | None = None,
        resolved_note: str | None = None,
    ) -> None:
        self._set_fields(locals())

    @property
    def detail(self) -> str:
        """What people read: the public message (never a card)."""
        return self.reason.message

    @property
    def state(self) -> str:
        if self.cleared_by is not None:
            return "cleared"
        if self.resolved_utc is not None:
            return "resolved"
        return "acknowledged" if self.acknowledged_by is not None else "active"


class DeviceState(Record):
    """A device as its entries leave it: identity, health, last event, security events."""

    device: str
    kind: str
    model: str
    serial_number: str
    firmware_version: str
    state: str  # ready | busy | fault | lost | unknown
    lamp: str
    fault_code: int
    last_event_utc: str
    last_reason: str
    security_events: int
    reconnects: int

    __slots__ = tuple(__annotations__)  # the fields declared above, in order

    def __init__(  # noqa: PLR0913, PLR0917 - a device's every part, as the fold and a checkpoint give them
        self,
        device: str,
        kind: str = "",
        model: str = "",
        serial_number: str = "",
        firmware_version: str = "",
        state: str = "unknown",
        lamp: str = "",
        fault_code: int = 0,
        last_event_utc: str = "",
        last_reason: str = "",
        security_events: int = 0,
        reconnects: int = 0,
    ) -> None:
        self._set_fields(locals())


_DEVICE_KINDS = frozenset({"device_ready", "device_lost", "device_status", "security_event"})


def fold_device(devices: dict[str, DeviceState], stored: Stored, entry: e.Entry | EntryView) -> None:
    """A device's entry (ready, lost, status, security event, noise summary) folded into ``devices``,
    the reducer's devices by name. Read by kind and attribute: the typed entry or its view alike."""
    read: Any = entry  # each kind's fields, by attribute
    kind = entry.kind
    if kind == "noise_suppressed":
        # Forged frames past their device's budget (controller/journal/noise.py): counted, not
        # journaled one by one. (Other categories' summaries name no device.)
        noisy = devices.get(read.source)
        if read.category == "forged_frame" and noisy is not None:
            noisy.security_events += read.count
        return
    if kind not in _DEVICE_KINDS:
        return
    device = devices.get(read.device)
    if device is None:
        device = devices[read.device] = DeviceState(device=read.device)
    device.last_event_utc = stored.time_utc
    if kind == "device_ready":
        if device.state == "lost":
            device.reconnects += 1
        device.state = "ready"
        device.kind = read.kind_of_device
        device.model = read.model
        device.serial_number = read.serial_number
        device.firmware_version = read.firmware_version
        device.last_reason = ""
    elif kind == "device_lost":
        device.state = "lost"
        device.last_reason = read.reason
    elif kind == "device_status":
        device.state = read.state
        device.lamp = read.lamp
        device.fault_code = read.fault_code
    else:
        device.security_events += 1
        device.last_reason = read.reason


# --- meters -------------------------------------------------------------------------------------

# What the meters' fold reads: a typed entry or its view (recall folds views, without the classes).
if TYPE_CHECKING:
    MeteredEntry = e.Entry | EntryView
    ClosingEntry = closing_entries.ClosingEntry | EntryView


class WagerMeter(Record):
    """One wager's meters (docs/journal.md "Meters")."""

    __slots__ = ("house_win_cents", "losses", "player_net_cents", "pushes", "returned", "stake_cents", "wins")
    stake_cents: int
    player_net_cents: int
    house_win_cents: int
    wins: int
    losses: int
    pushes: int
    returned: int

    def __init__(  # noqa: PLR0913, PLR0917 - one wager's every meter, as a checkpoint gives them
        self,
        stake_cents: int = 0,
        player_net_cents: int = 0,
        house_win_cents: int = 0,
        wins: int = 0,
        losses: int = 0,
        pushes: int = 0,
        returned: int = 0,
    ) -> None:
        self.stake_cents = stake_cents
        self.player_net_cents = player_net_cents
        self.house_win_cents = house_win_cents
        self.wins = wins
        self.losses = losses
        self.pushes = pushes
        self.returned = returned


# The kinds ``Meters.count`` moves a meter for (its dispatch below): an entry of any other kind leaves
# the meters as they were, so a reader may keep what it built from them (the floor keeps a table's
# meters document between its batches: docs/floor.md "The seventh stop").
METERED_KINDS: frozenset[str] = frozenset(METER_KINDS)


class Meters(Record):
    """Definitions in docs/journal.md "Meters"."""

    rounds_started: int
    rounds_settled: int
    rounds_dead: int
    rounds_voided: int
    handle_cents: int
    returned_cents: int
    player_net_cents: int
    banker_net_cents: int
    house_win_cents: int
    dp_net_cents: int
    rake_cents: int
    # The progressive's take (its wagers collected less its awards): the players' Progressive nets go
    # to the jackpot's fund, not to the banker, so a round balances only with it counted.
    progressive_net_cents: int
    dead_hands: int
    faults_raised: int
    faults_cleared: int
    faults_by_kind: Counter[str]
    by_wager: dict[str, WagerMeter]
    unbalanced_rounds: list[str]
    # The panel's chart: the last HISTORY_ROUNDS settled rounds' handle, house win and rake.
    history: deque[dict[str, Any]]

    __slots__ = tuple(__annotations__)  # the fields declared above, in order

    def __init__(  # noqa: PLR0913, PLR0917 - every meter, as a checkpoint gives them
        self,
        rounds_started: int = 0,
        rounds_settled: int = 0,
        rounds_dead: int = 0,
        rounds_voided: int = 0,
        handle_cents: int = 0,
        returned_cents: int = 0,
        player_net_cents: int = 0,
        banker_net_cents: int = 0,
        house_win_cents: int = 0,
        dp_net_cents: int = 0,
        rake_cents: int = 0,
        progressive_net_cents: int = 0,
        dead_hands: int = 0,
        faults_raised: int = 0,
        faults_cleared: int = 0,
        faults_by_kind: Counter[str] | None = None,
        by_wager: dict[str, WagerMeter] | None = None,
        unbalanced_rounds: list[str] | None = None,
        history: deque[dict[str, Any]] | None = None,
    ) -> None:
        self.rounds_started = rounds_started
        self.rounds_settled = rounds_settled
        self.rounds_dead = rounds_dead
        self.rounds_voided = rounds_voided
        self.handle_cents = handle_cents
        self.returned_cents = returned_cents
        self.player_net_cents = player_net_cents
        self.banker_net_cents = banker_net_cents
        self.house_win_cents = house_win_cents
        self.dp_net_cents = dp_net_cents
        self.rake_cents = rake_cents
        self.progressive_net_cents = progressive_net_cents
        self.dead_hands = dead_hands
        self.faults_raised = faults_raised
        self.faults_cleared = faults_cleared
        self.faults_by_kind = Counter() if faults_by_kind is None else faults_by_kind
        self.by_wager = {} if by_wager is None else by_wager
        self.unbalanced_rounds = [] if unbalanced_rounds is None else unbalanced_rounds
        self.history = deque(maxlen=HISTORY_ROUNDS) if history is None else history

    @property
    def rounds_open(self) -> int:
        return self.rounds_started - self.rounds_settled - self.rounds_dead - self.rounds_voided

    @property
    def balanced(self) -> bool:
        return (
            not self.unbalanced_rounds
            and self.player_net_cents + self.banker_net_cents + self.rake_cents + self.progressive_net_cents
            == 0
        )

    def count(self, entry: MeteredEntry, round_id: str, *, time_utc: str = "") -> bool:
        """The one meters fold (docs/journal.md "Meters"): what ``entry`` adds to the meters, by its
        typed kind: a round started, closed (counted by how it closed, its settlement added), a fault
        raised or cleared. Every reader counts through here (the reducer, a range's fold, the stored
        totals, the floor's gaming day, the daemon's run), so a new closing kind or meter is written
        once. Returns whether the entry moved a meter."""
        # By kind, not by class: a view (recall's fold) has no class to test.
        kind = entry.kind
        if kind in STATUS_BY_CLOSING_KIND:
            self.count_closing(cast("ClosingEntry", entry), round_id, time_utc=time_utc)
        elif kind == ROUND_STARTED:
            self.rounds_started += 1
        elif kind == FAULT_RAISED:
            self.faults_raised += 1
            self.faults_by_kind[cast("e.FaultRaised", entry).kind_of_fault] += 1
        elif kind == FAULT_CLEARED:
            self.faults_cleared += 1
        else:
            return False
        return True

    def count_closing(self, entry: ClosingEntry, round_id: str, *, time_utc: str = "") -> None:
        """A round's closing entry: the round counted by how it closed, its settlement added."""
        status = STATUS_BY_CLOSING_KIND[entry.kind]
        if status == "settled":
            self.rounds_settled += 1
        elif status == "dead":
            self.rounds_dead += 1
        else:
            self.rounds_voided += 1
        self.add_settlement(round_id, entry.settlement, voided=status == "void", time_utc=time_utc)

    def progressive_net_of(self, settlement: Mapping[str, Any]) -> int:
        """The round's progressive net (``settlement.progressive.net_cents``; 0 without a progressive)."""
        progressive = settlement.get("progressive")
        return int(progressive.get("net_cents", 0)) if isinstance(progressive, Mapping) else 0

    def add_settlement(
        self, round_id: str, settlement: Mapping[str, Any], *, voided: bool, time_utc: str = ""
    ) -> None:
        house_banked = settlement.get("banking", "house") == "house"
        round_player_net = 0
        round_handle = 0
        for seat in settlement.get("seats", []):
            # A voided round's seats are "dead" in its settlement shape, but no hand was judged dead.
            if seat.get("status") == "dead" and not voided:
                self.dead_hands += 1
            round_player_net += int(seat.get("net", 0))
            for name, wager in (seat.get("wagers") or {}).items():
                meter = self.by_wager.get(name)
                if meter is None:  # not ``setdefault``: that built a WagerMeter for every wager counted
                    meter = self.by_wager[name] = WagerMeter()
                stake = int(wager.get("stake", 0))
                net = int(wager.get("net", 0))
                result = wager.get("result")
                if result == "returned":
                    meter.returned += 1
                    self.returned_cents += stake
                    continue
                meter.stake_cents += stake
                meter.player_net_cents += net
                self.handle_cents += stake
                round_handle += stake
                if house_banked:
                    meter.house_win_cents -= net
                if result == "win":
                    meter.wins += 1
                elif result == "lose":
                    meter.losses += 1
                else:
                    meter.pushes += 1
        banker_net = int(settlement.get("banker_net", 0))
        rake = int(settlement.get("rake", 0))
        progressive_net = self.progressive_net_of(settlement)
        self.player_net_cents += round_player_net
        self.banker_net_cents += banker_net
        self.rake_cents += rake
        self.progressive_net_cents += progressive_net
        self.house_win_cents += rake + (banker_net if house_banked else 0)
        if not house_banked:
            self.dp_net_cents += banker_net
        if round_player_net + banker_net + rake + progressive_net != 0:
            self.unbalanced_rounds.append(round_id)
        if not settlement.get("dead") and not voided:
            self.history.append(
                {
                    "round_id": round_id,
                    "time_utc": time_utc,
                    "handle_cents": round_handle,
                    "house_win_cents": -round_player_net,
                    "rake_cents": rake,
                }
            )

    def to_json(self) -> dict[str, Any]:
        return {
            "rounds_started": self.rounds_started,
            "rounds_settled": self.rounds_settled,
            "rounds_dead": self.rounds_dead,
            "rounds_voided": self.rounds_voided,
            "rounds_open": self.rounds_open,
            "handle_cents": self.handle_cents,
            "returned_cents": self.returned_cents,
            "player_net_cents": self.player_net_cents,
            "banker_net_cents": self.banker_net_cents,
            "house_win_cents": self.house_win_cents,
            "dp_net_cents": self.dp_net_cents,
            "rake_cents": self.rake_cents,
            "progressive_net_cents": self.progressive_net_cents,
            "dead_hands": self.dead_hands,
            "faults_raised": self.faults_raised,
            "faults_cleared": self.faults_cleared,
            "faults_by_kind": dict(sorted(self.faults_by_kind.items())),
            "by_wager": {
                name: {
                    "stake_cents": meter.stake_cents,
                    "player_net_cents": meter.player_net_cents,
                    "house_win_cents": meter.house_win_cents,
                    "wins": meter.wins,
                    "losses": meter.losses,
                    "pushes": meter.pushes,
                    "returned": meter.returned,
                }
                for name, meter in sorted(self.by_wager.items())
            },
            "balanced": self.balanced,
            "unbalanced_rounds": self.unbalanced_rounds,
        }


class TheoreticalStakes(Record):
    """What a range's theoretical win needs beside its meters (controller/panel/shift_meters.py): the
    house-banked stakes in action (not returned) by (game, banking, wager), and the designated-player
    rounds it does not cover. Kept apart from ``Meters``: the reducer's meters (and so a checkpoint's)
    never carried them."""

    __slots__ = ("dp_rounds", "stakes")
    stakes: dict[tuple[str, str, str], int]
    dp_rounds: int

    def __init__(self, stakes: dict[tuple[str, str, str], int] | None = None, dp_rounds: int = 0) -> None:
        self.stakes = {} if stakes is None else stakes
        self.dp_rounds = dp_rounds

    def count(self, entry: MeteredEntry) -> bool:
        """A closing entry's stakes (the fold beside ``Meters.count``); any other entry adds nothing."""
        if entry.kind not in STATUS_BY_CLOSING_KIND:
            return False
        settlement = cast("ClosingEntry", entry).settlement
        banking = str(settlement.get("banking", "house"))
        if banking != "house":
            self.dp_rounds += 1
            return True
        game = str(settlement.get("game", ""))
        for seat in settlement.get("seats") or []:
            for name, wager in (seat.get("wagers") or {}).items():
                if isinstance(wager, Mapping) and wager.get("result") != "returned":
                    key = (game, banking, name)
                    self.stakes[key] = self.stakes.get(key, 0) + int(wager.get("stake", 0))
        return True


class MetersBeforeProgressiveNet(Meters):
    """The meters as releases before schema 4 read a round: the progressive's net left out, so each
    round with a Progressive wager was listed unbalanced. Only to check what those releases wrote and a
    seal signs (a checkpoint of format 2 or 3: controller/journal/checkpoint.py); never shown."""

    __slots__ = ()

    def progressive_net_of(self, settlement: Mapping[str, Any]) -> int:
        return 0
