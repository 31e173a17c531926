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
import contextlib
import json
import random
import ssl
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import nats
import nats.errors
import structlog
from nats.aio.client import Client
from nats.aio.msg import Msg

from controller.errors import UserError
from controller.floor.servers import table_inbox
from controller.progressive.controller import ClaimAnswer, LinkState, MeterView
from controller.progressive.model import Hit
from controller.waits import raise_if_cancelled, wait_event

log = structlog.get_logger("flushtable.progressive.link")

DEFAULT_LINK_TIMEOUT_S = 3.0


def _meter_subject(link_id: str) -> str:
    return f"progressive.{link_id}.meter"


def _claim_subject(link_id: str, table_id: str) -> str:
    return f"progressive.{link_id}.claim.{table_id}"


def _confirm_subject(link_id: str, table_id: str) -> str:
    return f"progressive.{link_id}.confirm.{table_id}"


@dataclass(frozen=True, slots=True)
class LinkConfig:
    """The table's ``[progressive]`` link (docs/configuration.md): the floor's NATS servers and the
    table's own credentials (the uplink's), the link's name, and the bound after which it is lost."""

    link_id: str
    table_id: str
    servers: tuple[str, ...]
    user: str
    password: str = field(repr=False)
    ca_file: Path
    link_timeout_s: float = DEFAULT_LINK_TIMEOUT_S
    backoff_initial_s: float = 0.2
    backoff_max_s: float = 5.0


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
        oldest_s = min((claim.first_sent_s for claim in self.pending.values()), default=None)
        if oldest_s is not None and now_s - oldest_s > bound:
            # The floor hears the table but has not recorded its claim (it does not hold the round yet):
            # a claim waiting longer than the bound is a link that does not work.
            return LinkState(False, f"progressive link lost: a claim waiting for the floor over {bound:g} s")
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
        reply = await self._request(_confirm_subject(self.config.link_id, self.config.table_id), body)
        if reply is None:
            raise UserError("progressive: the link is down; the confirmation was not recorded, try again")
        if reply.get("status") == "refused":
            raise UserError(f"progressive: {reply.get('reason', 'refused')}")
        return reply

    async def _send_claim(self, claim: PendingClaim) -> LinkedClaim:
        reply = await self._request(_claim_subject(self.config.link_id, self.config.table_id), claim.request)
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
        backoff_s = self.config.backoff_initial_s
        while not stop.is_set():
            raise_if_cancelled()
            client: Client | None = None
            try:
                client = await nats.connect(
                    servers=list(self.config.servers),
                    user=self.config.user,
                    password=self.config.password,
                    tls=ssl.create_default_context(cafile=str(self.config.ca_file)),
                    inbox_prefix=table_inbox(self.config.table_id),
                    allow_reconnect=False,
                    connect_timeout=5,
                    name=f"flushtable-progressive-{self.config.table_id}",
                )

                async def heard(message: Msg) -> None:
                    self._heard(message)

                await client.subscribe(_meter_subject(self.config.link_id), cb=heard)
                await client.flush()
                self._client = client
                self.connected.set()
                backoff_s = self.config.backoff_initial_s
                while not stop.is_set():
                    raise_if_cancelled()
                    if client.is_closed or not client.is_connected:
                        raise nats.errors.ConnectionClosedError
                    await self.resend_pending()
                    await wait_event(stop, min(0.2, self.config.link_timeout_s / 4))
            except (nats.errors.Error, OSError, TimeoutError, ssl.SSLError) as error:
                log.warning("progressive_link_retry", table_id=self.config.table_id, error=str(error)[:200])
            finally:
                self.connected.clear()
                self._client = None
                if client is not None:
                    with contextlib.suppress(Exception):
                        async with asyncio.timeout(2):
                            await client.close()
            if stop.is_set():
                break
            await wait_event(stop, min(backoff_s * (0.5 + self._rng.random()), self.config.backoff_max_s))
            backoff_s = min(backoff_s * 2, self.config.backoff_max_s)

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


__all__ = ["DEFAULT_LINK_TIMEOUT_S", "LinkClient", "LinkConfig", "LinkedClaim", "PendingClaim"]
