"""The table's link to a linked progressive (docs/floor.md "Linked progressive"): the progressive API
(controller/progressive/controller.py ``Progressive``) over NATS, answered by the floor's controller
(controller/floor/progressive.py).

- **The meter** is what the floor last broadcast on ``progressive.<link>.meter`` (it broadcasts at least
  once a second).
- **Contributions** are not sent from here: the floor counts them from the table's journal, which
  reaches it exactly once through the uplink (``round_settled``: the settled Progressive wagers). So
  there is no second counting path that could disagree with the journal.
- **A claim** is a request keyed by (table, round) naming the round's settling entry (``through_seq``),
  answered by the floor only after the award is committed; a replay gets the first answer.
- **Link lost**: no broadcast within ``link_timeout_s``, or a claim or confirmation left unanswered that
  long. Then :meth:`link_state` says so (the table refuses Progressive wagers at the next lock, with the
  reason on the display), and a claim that could not be answered is kept **pending** and sent again,
  the same request, until answered: the floor's idempotence pays it once, at the meter it records then.

The clock is injected (``clock``: monotonic seconds) so the link's bound is tested without waiting.
"""

from __future__ import annotations

import asyncio
import json
import random
import ssl
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import nats
import nats.errors
import structlog
from nats.aio.client import Client
from nats.aio.msg import Msg

from controller.errors import UserError
from controller.logs import log_nats_error
from controller.progressive.controller import ClaimAnswer, ConfirmationSent, LinkState, MeterView, PaidAnswer
from controller.progressive.model import Hit, MeterState, ProgressiveParameters
from controller.tls import ssl_context
from controller.uplink.wire import (
    NATS_MAX_OUTSTANDING_PINGS,
    NATS_PING_INTERVAL_S,
    progressive_claim_subject,
    progressive_confirm_subject,
    progressive_meter_subject,
    table_inbox,
)
from controller.waits import ReconnectDelay, close_quietly, raise_if_cancelled, wait_event

if TYPE_CHECKING:
    from controller.config.resolved import UplinkConfig

log = structlog.get_logger("flushtable.progressive.link")

DEFAULT_LINK_TIMEOUT_S = 3.0


@dataclass(frozen=True, slots=True)
class LinkConfig:
    """The table's ``[progressive]`` link (docs/configuration.md): the link's name, the bound after which
    it is lost, and the table's ``[uplink]``, whose servers, credentials, CA and backoff the link uses
    (held whole, not copied field by field: one place says how the table reaches the floor)."""

    link_id: str
    table_id: str
    uplink: UplinkConfig
    link_timeout_s: float = DEFAULT_LINK_TIMEOUT_S


@dataclass
class PendingClaim:
    """A claim sent and not yet answered: sent again, the same request, until answered."""

    round_id: str
    request: bytes
    first_sent_s: float


@dataclass(frozen=True, slots=True)
class LinkedClaim:
    """What the floor answered a claim: ``status`` recorded, replayed, refused, or pending (no answer
    yet: the claim is kept and sent again); ``answer`` the awards recorded, in the order recorded."""

    status: str
    answer: ClaimAnswer | None = None
    reason: str = ""

    @property
    def pending(self) -> bool:
        return self.status == "pending"


def _awards_answer(table_id: str, round_id: str, reply: dict[str, Any]) -> ClaimAnswer:
    from controller.journal import entries as e  # the typed entries the awards are  # noqa: PLC0415
    from controller.progressive.model import AwardState  # noqa: PLC0415

    awards = []
    for award in reply.get("awards", []):
        claimed = {k: v for k, v in award.items() if k not in ("status", "paid_by")}
        state = AwardState(e.ProgressiveAwardClaimed(**claimed))
        if award.get("status") == "paid":
            state.paid = e.ProgressiveAwardPaid(
                meter_id=state.claimed.meter_id,
                award_id=state.claimed.award_id,
                table_id=state.claimed.table_id,
                round_id=state.claimed.round_id,
                seat=state.claimed.seat,
                amount_cents=state.claimed.amount_cents,
                by=str(award.get("paid_by") or ""),
            )
        awards.append(state)
    return ClaimAnswer(table_id, round_id, tuple(awards), reply.get("status") == "replayed")


class LinkClient:
    """The table's side of the link. ``run`` keeps the connection, listens to the meter and sends the
    pending claims again; the request methods answer at once with what the floor said, or pending."""

    def __init__(
        self,
        config: LinkConfig,
        *,
        clock: Callable[[], float] = time.monotonic,
        rng: random.Random | None = None,
    ) -> None:
        self.config = config
        self._clock = clock
        self._rng = rng or random.Random()
        self._client: Client | None = None
        self.last_meter: dict[str, Any] | None = None
        self.last_meter_s: float | None = None
        self.unanswered_since_s: float | None = None  # a request that went unanswered, since when
        self.pending: dict[str, PendingClaim] = {}  # round -> the claim sent again until answered
        self.answers: dict[str, LinkedClaim] = {}  # round -> the floor's answer (kept: shown, never re-asked)
        self.on_answer: Callable[[LinkedClaim], None] | None = None  # told when a pending claim is answered
        self.confirm_queue: list[tuple[str, str]] = []  # (award, by): a supervisor's, sent by ``run``
        self.connected = asyncio.Event()

    # --- the link's state ---------------------------------------------------------------------------
    def link_state(self) -> LinkState:
        now_s = self._clock()
        bound = self.config.link_timeout_s
        if self.last_meter_s is None:
            return LinkState(False, "progressive link lost: no meter from the floor yet")
        if now_s - self.last_meter_s > bound:
            return LinkState(False, f"progressive link lost: no meter from the floor for over {bound:g} s")
        if self.unanswered_since_s is not None:
            return LinkState(False, f"progressive link lost: a claim went unanswered for {bound:g} s")
        return LinkState(True)

    def meter_view(self) -> MeterView:
        meter = self.last_meter
        if meter is None:
            raise UserError("progressive: no meter from the floor yet (the link is down)")
        return MeterView(
            str(meter.get("meter_id", self.config.link_id)),
            int(meter["meter_cents"]),
            int(meter["reserve_cents"]),
            int(meter["unit_cents"]),
            (),
            {"pending": meter.get("pending", []), "events": meter.get("events")},
        )

    def panel_view(self) -> dict[str, Any]:
        """The table panel's Progressive card on a linked table: the link's meter as the floor last
        broadcast it (None before the first broadcast), whether the link is up (else its "link lost"
        line), and THIS table's awards the floor holds pending (the broadcast covers every table of the
        link; another table's award is confirmed at that table)."""
        meter = self.last_meter or {}
        table_id = self.config.table_id
        pending = [
            award
            for award in meter.get("pending", []) or []
            if isinstance(award, dict)
            and award.get("table_id") == table_id
            and award.get("status", "pending") == "pending"
        ]
        meter_cents = meter.get("meter_cents")
        reserve_cents = meter.get("reserve_cents")
        return {
            "linked": True,
            "link_id": self.config.link_id,
            "meter_id": str(meter.get("meter_id", self.config.link_id)),
            "meter_cents": meter_cents if isinstance(meter_cents, int) else None,
            "reserve_cents": reserve_cents if isinstance(reserve_cents, int) else None,
            "link": self.link_state().to_json(),
            "pending": pending,
        }

    # --- requests -----------------------------------------------------------------------------------
    async def claim(
        self, round_id: str, hits: Sequence[Hit], *, through_seq: int, by: str = "engine"
    ) -> LinkedClaim:
        """Claim a round's hits (its settling entry is journal entry ``through_seq``). The floor's answer,
        or pending: then the same request is sent again by ``run`` until answered, never a new one."""
        if round_id in self.answers:
            return self.answers[round_id]
        self.submit(round_id, hits, through_seq=through_seq, by=by)
        pending = self.pending.get(round_id)
        return self.answers[round_id] if pending is None else await self._send_claim(pending)

    def submit(self, round_id: str, hits: Sequence[Hit], *, through_seq: int, by: str = "engine") -> None:
        """Make the claim pending without waiting: ``run`` sends it (and again, the same request, until
        the floor answers). A claim already made or answered is not made again."""
        if round_id not in self.pending and round_id not in self.answers:
            request = json.dumps(
                {
                    "table_id": self.config.table_id,
                    "round_id": round_id,
                    "hits": [{"seat": hit.seat, "run_length": hit.run_length} for hit in hits],
                    "through_seq": through_seq,
                    "by": by,
                },
                separators=(",", ":"),
            ).encode()
            self.pending[round_id] = PendingClaim(round_id, request, self._clock())

    async def confirm_paid(self, award_id: str, *, by: str) -> dict[str, Any]:
        """A supervisor's confirmation that an award was paid: the floor's answer (``paid``, or
        ``replayed`` when it already was: nothing is paid twice). UserError when the link is down."""
        body = json.dumps({"award_id": award_id, "by": by}).encode()
        reply = await self._request(
            progressive_confirm_subject(self.config.link_id, self.config.table_id), body
        )
        if reply is None:
            raise UserError("progressive: the link is down; the confirmation was not recorded, try again")
        if reply.get("status") == "refused":
            raise UserError(f"progressive: {reply.get('reason', 'refused')}")
        return reply

    async def _send_claim(self, claim: PendingClaim) -> LinkedClaim:
        reply = await self._request(
            progressive_claim_subject(self.config.link_id, self.config.table_id), claim.request
        )
        if reply is None or reply.get("status") == "wait":
            return LinkedClaim("pending", reason="" if reply is None else str(reply.get("reason", "")))
        status = str(reply.get("status"))
        if status == "refused":
            answer = LinkedClaim("refused", reason=str(reply.get("reason", "refused")))
        else:
            answer = LinkedClaim(status, _awards_answer(self.config.table_id, claim.round_id, reply))
        self.pending.pop(claim.round_id, None)
        self.answers[claim.round_id] = answer
        return answer

    async def _request(self, subject: str, body: bytes) -> dict[str, Any] | None:
        """The floor's answer, or None when none came within the link's bound (the link is then lost
        until a request is answered)."""
        client = self._client
        if client is None or not client.is_connected:
            self.unanswered_since_s = self.unanswered_since_s or self._clock()
            return None
        try:
            message = await client.request(subject, body, timeout=self.config.link_timeout_s)
        except (nats.errors.Error, TimeoutError, OSError):
            self.unanswered_since_s = self.unanswered_since_s or self._clock()
            return None
        self.unanswered_since_s = None
        try:
            reply = json.loads(message.data)
        except ValueError:
            return None
        return reply if isinstance(reply, dict) else None

    # --- the connection -----------------------------------------------------------------------------
    def _heard(self, message: Msg) -> None:
        try:
            meter = json.loads(message.data)
        except ValueError:
            return
        if isinstance(meter, dict) and isinstance(meter.get("meter_cents"), int):
            self.last_meter = meter
            self.last_meter_s = self._clock()
            if not self.pending:
                self.unanswered_since_s = None  # a confirmation lost earlier: the floor is back

    async def run(self, stop: asyncio.Event) -> None:
        retry = ReconnectDelay.of(self.config.uplink, self._rng)
        while not stop.is_set():
            raise_if_cancelled()
            client: Client | None = None
            try:
                client = await self._connect()

                async def heard(message: Msg) -> None:
                    self._heard(message)

                await client.subscribe(progressive_meter_subject(self.config.link_id), cb=heard)
                await client.flush()
                self._client = client
                self.connected.set()
                retry.reset()
                while not stop.is_set():
                    raise_if_cancelled()
                    if client.is_closed or not client.is_connected:
                        raise nats.errors.ConnectionClosedError
                    await self.resend_pending()
                    await self.send_confirmations()
                    await wait_event(stop, min(0.2, self.config.link_timeout_s / 4))
            except (nats.errors.Error, OSError, TimeoutError, ssl.SSLError) as error:
                log.warning("progressive_link_retry", table_id=self.config.table_id, error=str(error)[:200])
            finally:
                self.connected.clear()
                self._client = None
                await close_quietly(client.close() if client is not None else None)
            if stop.is_set():
                break
            await retry.wait(stop)

    async def _connect(self) -> Client:
        """One connection to the floor's nats-server (TLS, this table's user); a process that runs many
        link clients (the simulation) may gate it. The table's ``[uplink]`` says how: the uplink's own TLS
        context (TLS 1.2 at least) and its connect timeout, so the link and the uplink reach the floor
        alike."""
        uplink = self.config.uplink
        return await nats.connect(
            servers=list(uplink.servers),
            user=uplink.user,
            password=uplink.password,
            tls=ssl_context(uplink.ca_file),
            inbox_prefix=table_inbox(self.config.table_id),
            allow_reconnect=False,
            connect_timeout=uplink.connect_timeout_s,
            name=f"flushtable-progressive-{self.config.table_id}",
            # A silent node noticed in seconds, as the uplink's and the floor's (wire.py's why).
            ping_interval=NATS_PING_INTERVAL_S,
            max_outstanding_pings=NATS_MAX_OUTSTANDING_PINGS,
            error_cb=log_nats_error,
        )

    async def send_confirmations(self) -> None:
        """The supervisors' confirmations queued at the table, in order, each until the floor answered
        (a replay of one the floor already recorded is answered ``replayed``: never paid twice)."""
        while self.confirm_queue:
            award_id, by = self.confirm_queue[0]
            try:
                await self.confirm_paid(award_id, by=by)
            except UserError as error:
                if "link is down" in str(error):
                    return  # asked again on the next turn
                log.warning("progressive_confirmation_refused", award_id=award_id, reason=str(error))
            self.confirm_queue.pop(0)

    async def resend_pending(self) -> int:
        """Send every pending claim again, oldest first (the order the table made them); how many were
        answered."""
        answered = 0
        for claim in sorted(self.pending.values(), key=lambda c: c.first_sent_s):
            answer = await self._send_claim(claim)
            if answer.pending:
                break  # the link is still down (or the floor still behind): keep the order
            answered += 1
            if self.on_answer is not None:
                self.on_answer(answer)
        return answered


class LinkedTableController:
    """The table engine's controller on a linked table (controller/engine/progressive.py
    ``TableProgressive.controller``): the engine's synchronous calls answered from the link client.

    - ``contribute_now`` sends nothing: the floor counts the round from the table's journal;
    - ``claim_now`` returns the floor's answer once it came; until then the claim is made pending in the
      client (sent by its ``run``, again until answered) and :class:`ProgressiveUnavailable` tells the
      engine to ask again on its next tick (the round settles meanwhile, the claim shown pending);
    - ``state`` is the meter the floor last broadcast (the display, the settle input's meter);
    - a manager's change of parameters is the floor's (the link's ``[progressive.links.NAME]``), and a
      supervisor's confirmation is sent to the floor and recorded there (``confirm_paid_now`` queues it
      and says so in one line)."""

    def __init__(
        self,
        client: LinkClient,
        parameters: ProgressiveParameters,
        settled_seq: Callable[[str], int | None],
    ) -> None:
        self.client = client
        self.settled_seq = settled_seq  # a round's round_settled entry in the table's journal, once there
        self.state = MeterState(meter_id=client.config.link_id, parameters=parameters)
        self.state.config_parameters = parameters
        self.state.opened_base_cents = parameters.settings.base_cents
        self.state.meter_cents = parameters.settings.base_cents

    def _sync(self) -> None:
        meter = self.client.last_meter
        if meter is not None:
            self.state.meter_cents = int(meter["meter_cents"])
            self.state.reserve_cents = int(meter["reserve_cents"])

    def link_state(self) -> LinkState:
        self._sync()
        return self.client.link_state()

    def open_now(self, meter_id: str, parameters: ProgressiveParameters, *, by: str) -> bool:
        return False  # the floor opens the link's meter

    def change_parameters_now(self, parameters: ProgressiveParameters, *, by: str, reason: str) -> None:
        raise UserError(
            f"progressive: the linked meter {self.client.config.link_id}'s parameters are the floor's "
            f"([progressive.links.{self.client.config.link_id}] in its file), not this table's"
        )

    def contribute_now(self, table_id: str, round_id: str, wagers: int) -> None:
        """Nothing to send: the floor counts the round's settled wagers from this table's journal."""
        self._sync()

    def claim_now(
        self, table_id: str, round_id: str, hits: Sequence[Hit], *, by: str = "engine"
    ) -> ClaimAnswer:
        from controller.engine.progressive import ProgressiveUnavailable  # noqa: PLC0415 (no cycle at import)

        self._sync()
        answer = self.client.answers.get(round_id)
        if answer is not None:
            if answer.status == "refused" or answer.answer is None:
                raise UserError(answer.reason or "progressive: the floor refused the claim")
            return answer.answer
        seq = self.settled_seq(round_id)
        if seq is None:
            raise ProgressiveUnavailable(f"round {round_id}'s settlement is not yet in the journal")
        self.client.submit(round_id, hits, through_seq=seq, by=by)
        raise ProgressiveUnavailable(
            f"the claim for round {round_id} is sent to the floor; waiting for its answer"
        )

    def confirm_paid_now(self, award_id: str, *, by: str) -> PaidAnswer:
        self.client.confirm_queue.append((award_id, by))
        raise ConfirmationSent(
            f"progressive: award {award_id} is the linked meter's: the confirmation was sent to the floor, "
            f"which records it (the award shows paid once it has)"
        )

    def meter_now(self) -> MeterView:
        self._sync()
        return self.client.meter_view()


def journal_settled_seq(journal_path: Path) -> Callable[[str], int | None]:
    """A lookup of a round's ``round_settled`` entry in the table's journal, on a read-only connection
    of its own opened for each read and closed after it (the daemon's writer is never blocked). None
    is held between reads: the daemon seals the open segment between rounds only when no other
    connection is on the file (docs/journal.md "Sealing while the table runs"), and a connection kept
    for the daemon's life deferred every seal to the next start. Read in the open segment, then in the
    last sealed one: a round never spans two segments, and the round asked about has just settled, so a
    seal since then moved it there at most."""
    import sqlite3  # noqa: PLC0415

    from controller.journal.seals import locate_segment, seal_numbers  # noqa: PLC0415 (a cycle)

    query = "SELECT seq FROM journal WHERE round_id = ? AND kind = 'round_settled' ORDER BY seq DESC LIMIT 1"

    def read(path: Path, round_id: str) -> int | None:
        connection = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        try:
            row = connection.execute(query, (round_id,)).fetchone()
        finally:
            connection.close()
        return None if row is None else int(row[0])

    def lookup(round_id: str) -> int | None:
        seq = read(journal_path, round_id)
        if seq is not None:
            return seq
        numbers = seal_numbers(journal_path)
        return read(locate_segment(journal_path, numbers[-1]), round_id) if numbers else None

    return lookup


ANSWERED_KIND = "linked_claim_answered"  # the table's record that the floor answered a claim
ANSWERED_ACTION = "progressive_claim_answered"  # the same record as releases up to 9254278 wrote it


@dataclass(frozen=True, slots=True)
class UnansweredClaim:
    """A claim the table's journal shows made (or due: the round settled with a hit) and not answered."""

    round_id: str
    wagers: int
    hits: tuple[Hit, ...]


def unanswered_claims(journal_path: Path) -> list[UnansweredClaim]:
    """Every claim this table made, or should have made, that has no recorded answer, in journal order:
    each ``round_settled`` whose Progressive settlement has awards, less the rounds with a
    ``linked_claim_answered`` (journaled when the floor's answer came; an earlier release's
    ``operator_action`` ``progressive_claim_answered`` counts the same). A restart
    asks these again, the same (table, round) key: the floor answers a replay with its first answer, so
    nothing is paid twice (docs/floor.md "Linked progressive")."""
    import sqlite3  # noqa: PLC0415

    connection = sqlite3.connect(f"file:{journal_path}?mode=ro", uri=True)
    try:
        answered = {
            str(row[0])
            for row in connection.execute(
                # ``linked_claim_answered``, or the ``operator_action`` an earlier release wrote for it
                "SELECT round_id FROM journal WHERE round_id IS NOT NULL AND (kind = ? "
                "OR (kind = 'operator_action' AND json_extract(payload, '$.action') = ?))",
                (ANSWERED_KIND, ANSWERED_ACTION),
            )
        }
        claims: list[UnansweredClaim] = []
        for round_id, payload_text in connection.execute(
            "SELECT round_id, payload FROM journal WHERE kind = 'round_settled' ORDER BY seq"
        ):
            if round_id is None or round_id in answered:
                continue
            try:
                progressive = json.loads(payload_text).get("settlement", {}).get("progressive")
            except (ValueError, AttributeError):
                continue
            if not isinstance(progressive, dict) or not progressive.get("awards"):
                continue
            hits = tuple(Hit(int(award["seat"]), int(award["line"])) for award in progressive["awards"])
            wagers = int(progressive.get("contributions", {}).get("wagers", 0))
            claims.append(UnansweredClaim(str(round_id), wagers, hits))
        return claims
    finally:
        connection.close()


__all__ = [
    "ANSWERED_ACTION",
    "ANSWERED_KIND",
    "DEFAULT_LINK_TIMEOUT_S",
    "LinkClient",
    "LinkConfig",
    "LinkedClaim",
    "LinkedTableController",
    "PendingClaim",
    "UnansweredClaim",
    "journal_settled_seq",
    "unanswered_claims",
]
