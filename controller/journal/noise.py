"""Bounded journaling of noise: failed logins, refused actions and forged device frames.

Anyone who can reach the panel or a device's line can cause these entries, so without a limit anyone
could grow the journal as fast as they can send. A :class:`NoiseBudget` decides for each such event
whether it is journaled as it is or only counted; the counted ones come back as ONE summary per
source (a ``noise_suppressed`` entry) carrying the count and the first and last times. No count is
lost: for every category, the events journaled plus the counts of the summaries equal the events seen
(once :meth:`NoiseBudget.flush` has run at shutdown).

The budget is per ``(category, source)`` — the source being the remote address, the user or the
device — a token bucket: ``burst`` events at once, then ``rate_per_s`` on average. A source's run of
suppressed events is summarized ``summary_after_s`` after the run's first event (found at the next
call of :meth:`NoiseBudget.admit` or :meth:`NoiseBudget.due`), or by :meth:`NoiseBudget.flush`.
So each source adds at most ``burst + rate_per_s * W + W / summary_after_s + 1`` entries in any W
seconds.

Memory is bounded too: at most ``max_sources`` sources are tracked. A source that would be one more
goes to its category's "other sources" bucket (one budget shared by all of them), whose summary also
says how many distinct sources it covered (counted up to ``max_other_names``). A tracked source whose
bucket is full again and has nothing pending is forgotten when room is needed (it is then exactly a
new source).

Pure: no clock and no I/O inside. The caller passes ``now_s`` (a monotonic clock, in seconds) and the
event's UTC time as text (for the summary's first and last times), and journals what it is told to.
"""

from __future__ import annotations

from collections import Counter, OrderedDict, deque
from dataclasses import dataclass, field
from datetime import UTC, datetime

from controller.journal.entries import NoiseSuppressed

NOISE_SUPPRESSED = "noise_suppressed"
"""The journal entry kind of a summary."""

# The noisy categories (fixed names from the code, never from input: each has one "other" bucket).
LOGIN_FAILED = "login_failed"
REFUSED_ACTION = "refused_action"
FORGED_FRAME = "forged_frame"

OTHER_SOURCES = "(other sources)"
"""The source of a summary of the "other sources" bucket (no address, user or device looks like it)."""


@dataclass(frozen=True, slots=True)
class NoisePolicy:
    """How much noise each source may journal. The defaults (a constant, not a configuration key: an
    operator has no reason to let an attacker write more, and less would hide a real problem): 5 a
    minute per source after a burst of 10, a summary at most a minute after the first suppressed event,
    256 sources tracked."""

    rate_per_s: float = 5 / 60
    burst: int = 10
    summary_after_s: float = 60.0
    max_sources: int = 256
    max_other_names: int = 1024

    def __post_init__(self) -> None:
        if not self.rate_per_s > 0:
            raise ValueError("rate_per_s: must be above 0")
        if self.burst < 1:
            raise ValueError("burst: must be at least 1")
        if not self.summary_after_s > 0:
            raise ValueError("summary_after_s: must be above 0")
        if self.max_sources < 0 or self.max_other_names < 0:
            raise ValueError("max_sources, max_other_names: must not be negative")


DEFAULT_NOISE_POLICY = NoisePolicy()


@dataclass(frozen=True, slots=True)
class NoiseSummary:
    """One ``noise_suppressed`` entry: ``count`` events of ``category`` from ``source`` not journaled."""

    category: str
    source: str
    count: int
    first_time_utc: str
    last_time_utc: str
    distinct_sources: int | None = None  # the "other sources" bucket only
    distinct_sources_capped: bool = False  # more distinct sources than were counted

    def entry(self) -> NoiseSuppressed:
        """The entry to journal. ``distinct_sources_capped`` is said only with ``distinct_sources`` (the
        "other sources" bucket): a tracked source's summary carries the kind's default."""
        counted = self.distinct_sources is not None
        return NoiseSuppressed(
            category=self.category,
            source=self.source,
            count=self.count,
            first_time_utc=self.first_time_utc,
            last_time_utc=self.last_time_utc,
            distinct_sources=self.distinct_sources,
            distinct_sources_capped=self.distinct_sources_capped if counted else False,
        )


@dataclass(frozen=True, slots=True)
class Verdict:
    """What to do with one event: journal these summaries first (may be empty), then the event itself
    when ``journal``. ``bucket`` is the budget that decided: the event's source or OTHER_SOURCES."""

    journal: bool
    summaries: tuple[NoiseSummary, ...]
    bucket: str


@dataclass(slots=True)
class _Bucket:
    category: str
    source: str
    tokens: float
    last_s: float
    count: int = 0  # suppressed in the current run
    run: int = 0  # which run: a due marker of an earlier run is stale
    first_s: float = 0.0
    first_utc: str = ""
    last_utc: str = ""
    names: set[str] | None = None  # the "other sources" bucket: the distinct sources of this run
    names_capped: bool = False


@dataclass(slots=True)
class NoiseCounts:
    """Per category: events seen, journaled as they are, and counted in emitted summaries."""

    seen: Counter[str] = field(default_factory=Counter)
    journaled: Counter[str] = field(default_factory=Counter)
    summarized: Counter[str] = field(default_factory=Counter)
    summaries: Counter[str] = field(default_factory=Counter)


class NoiseBudget:
    """The per-source budget of noisy events (see the module's docstring)."""

    def __init__(self, policy: NoisePolicy = DEFAULT_NOISE_POLICY) -> None:
        self.policy = policy
        self.counts = NoiseCounts()
        self._buckets: OrderedDict[tuple[str, str], _Bucket] = OrderedDict()  # least recently used first
        self._other: dict[str, _Bucket] = {}
        self._due: deque[tuple[float, _Bucket, int]] = deque()  # (due_s, bucket, run), due_s ascending
        self._now_s = float("-inf")

    @property
    def tracked_sources(self) -> int:
        return len(self._buckets)

    @property
    def pending(self) -> int:
        """Events counted and not yet in an emitted summary."""
        return sum(b.count for b in self._buckets.values()) + sum(b.count for b in self._other.values())

    def admit(self, category: str, source: str, now_s: float, time_utc: str) -> Verdict:
        """One noisy event of ``category`` from ``source`` at ``now_s``: journal it, or count it."""
        now_s = self._advance(now_s)
        summaries = self._take_due(now_s)
        bucket = self._bucket(category, source, now_s)
        self.counts.seen[category] += 1
        self._refill(bucket, now_s)
        if bucket.tokens >= 1.0:
            bucket.tokens -= 1.0
            self.counts.journaled[category] += 1
            return Verdict(True, tuple(summaries), bucket.source)
        if bucket.count == 0:
            bucket.run += 1
            bucket.first_s = now_s
            bucket.first_utc = time_utc
            if bucket.names is not None:
                bucket.names.clear()
                bucket.names_capped = False
            self._due.append((now_s + self.policy.summary_after_s, bucket, bucket.run))
        bucket.count += 1
        bucket.last_utc = time_utc
        if bucket.names is not None and source not in bucket.names:
            if len(bucket.names) < self.policy.max_other_names:
                bucket.names.add(source)
            else:
                bucket.names_capped = True
        return Verdict(False, tuple(summaries), bucket.source)

    def due(self, now_s: float) -> list[NoiseSummary]:
        """The summaries whose time has come (call it now and then: a ticker, a timer)."""
        return self._take_due(self._advance(now_s))

    def flush(self) -> list[NoiseSummary]:
        """Every pending summary now, oldest run first (at shutdown: nothing counted is left behind)."""
        pending = [b for b in (*self._buckets.values(), *self._other.values()) if b.count > 0]
        pending.sort(key=lambda b: b.first_s)
        self._due.clear()
        return [self._summarize(bucket) for bucket in pending]

    # --- inside ------------------------------------------------------------------------------------
    def _advance(self, now_s: float) -> float:
        # A monotonic clock never goes back; if a caller's does, time stands still instead.
        self._now_s = max(self._now_s, now_s)
        return self._now_s

    def _refill(self, bucket: _Bucket, now_s: float) -> None:
        elapsed_s = now_s - bucket.last_s
        if elapsed_s > 0:
            bucket.tokens = min(float(self.policy.burst), bucket.tokens + elapsed_s * self.policy.rate_per_s)
        bucket.last_s = now_s

    def _bucket(self, category: str, source: str, now_s: float) -> _Bucket:
        key = (category, source)
        bucket = self._buckets.get(key)
        if bucket is not None:
            self._buckets.move_to_end(key)
            return bucket
        if len(self._buckets) >= self.policy.max_sources:
            self._forget_idle(now_s)
        if len(self._buckets) < self.policy.max_sources:
            bucket = _Bucket(category, source, float(self.policy.burst), now_s)
            self._buckets[key] = bucket
            return bucket
        other = self._other.get(category)
        if other is None:
            other = _Bucket(category, OTHER_SOURCES, float(self.policy.burst), now_s, names=set())
            self._other[category] = other
        return other

    def _forget_idle(self, now_s: float) -> None:
        """Forget the least recently used sources whose bucket is full again with nothing pending: the
        same as a new source, so forgetting them gives nobody a larger budget."""
        burst = float(self.policy.burst)
        while self._buckets:
            key, bucket = next(iter(self._buckets.items()))
            if bucket.count > 0:
                return
            self._refill(bucket, now_s)
            if bucket.tokens < burst:
                return
            del self._buckets[key]

    def _take_due(self, now_s: float) -> list[NoiseSummary]:
        out: list[NoiseSummary] = []
        while self._due and self._due[0][0] <= now_s:
            _, bucket, run = self._due.popleft()
            if bucket.run == run and bucket.count > 0:
                out.append(self._summarize(bucket))
        return out

    def _summarize(self, bucket: _Bucket) -> NoiseSummary:
        summary = NoiseSummary(
            category=bucket.category,
            source=bucket.source,
            count=bucket.count,
            first_time_utc=bucket.first_utc,
            last_time_utc=bucket.last_utc,
            distinct_sources=None if bucket.names is None else len(bucket.names),
            distinct_sources_capped=bucket.names_capped,
        )
        self.counts.summarized[bucket.category] += bucket.count
        self.counts.summaries[bucket.category] += 1
        bucket.count = 0
        if bucket.names is not None:
            bucket.names.clear()
            bucket.names_capped = False
        return summary


def utc_text(moment: datetime) -> str:
    """A moment as the journal writes times: ISO 8601 UTC with microseconds and ``Z``."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


__all__ = [
    "DEFAULT_NOISE_POLICY",
    "FORGED_FRAME",
    "LOGIN_FAILED",
    "NOISE_SUPPRESSED",
    "OTHER_SOURCES",
    "REFUSED_ACTION",
    "NoiseBudget",
    "NoiseCounts",
    "NoisePolicy",
    "NoiseSummary",
    "Verdict",
    "utc_text",
]
