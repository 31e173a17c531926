"""controller.journal.noise: the per-source budget of noisy events. Every clock here is a number the
test moves; no count is ever lost, and no source writes more than its budget."""

from __future__ import annotations

import math
from collections import Counter, defaultdict

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.journal.entries import NoiseSuppressed
from controller.journal.noise import (
    FORGED_FRAME,
    LOGIN_FAILED,
    OTHER_SOURCES,
    NoiseBudget,
    NoisePolicy,
    NoiseSummary,
)

POLICY = NoisePolicy(rate_per_s=5 / 60, burst=10, summary_after_s=60.0, max_sources=4, max_other_names=8)


def t(second: float) -> str:
    return f"t+{second:g}"


def test_a_burst_is_journaled_then_the_rest_is_counted_and_summarized_once() -> None:
    budget = NoiseBudget(POLICY)
    verdicts = [budget.admit(LOGIN_FAILED, "addr:10.0.0.9", 0.0, t(0)) for _ in range(500)]
    assert sum(v.journal for v in verdicts) == 10
    assert not any(v.summaries for v in verdicts)  # the run is not due yet
    assert budget.due(59.9) == []
    [summary] = budget.due(60.0)
    assert summary == NoiseSummary(LOGIN_FAILED, "addr:10.0.0.9", 490, t(0), t(0))
    assert summary.entry() == NoiseSuppressed(
        category=LOGIN_FAILED, source="addr:10.0.0.9", count=490, first_time_utc=t(0), last_time_utc=t(0)
    )
    assert budget.due(1000.0) == []
    assert budget.flush() == []


def test_the_rate_refills_a_source_and_a_summary_goes_out_with_the_next_event_after_its_window() -> None:
    budget = NoiseBudget(POLICY)
    for _ in range(11):
        budget.admit(FORGED_FRAME, "shuffler", 0.0, t(0))  # 10 journaled, 1 counted
    assert budget.admit(FORGED_FRAME, "shuffler", 11.9, t(11.9)).journal is False
    assert budget.admit(FORGED_FRAME, "shuffler", 12.0, t(12)).journal is True  # 5 a minute: one per 12 s
    verdict = budget.admit(FORGED_FRAME, "display", 61.0, t(61))
    assert verdict.journal is True
    assert verdict.summaries == (NoiseSummary(FORGED_FRAME, "shuffler", 2, t(0), t(11.9)),)


def test_sources_and_categories_have_budgets_of_their_own() -> None:
    budget = NoiseBudget(POLICY)
    for source in ("addr:a", "addr:b"):
        for category in (LOGIN_FAILED, FORGED_FRAME):
            assert all(budget.admit(category, source, 0.0, t(0)).journal for _ in range(10))
            assert not budget.admit(category, source, 0.0, t(0)).journal


def test_past_the_source_cap_new_sources_share_the_other_bucket_and_are_counted_by_name() -> None:
    budget = NoiseBudget(POLICY)
    for n in range(4):
        budget.admit(LOGIN_FAILED, f"addr:{n}", 0.0, t(0))
    verdicts = [budget.admit(LOGIN_FAILED, f"addr:x{n}", 1.0, t(1)) for n in range(30)]
    assert budget.tracked_sources == 4
    assert {v.bucket for v in verdicts} == {OTHER_SOURCES}
    assert sum(v.journal for v in verdicts) == 10  # the other bucket has one budget
    [summary] = budget.flush()
    assert summary.source == OTHER_SOURCES
    assert summary.count == 20
    assert summary.distinct_sources == 8
    assert summary.distinct_sources_capped
    assert summary.entry().distinct_sources == 8
    assert budget.counts.seen[LOGIN_FAILED] == budget.counts.journaled[LOGIN_FAILED] + 20


def test_an_idle_source_is_forgotten_to_make_room_and_comes_back_as_new() -> None:
    budget = NoiseBudget(POLICY)
    for n in range(4):
        budget.admit(LOGIN_FAILED, f"addr:{n}", 0.0, t(0))
    budget.admit(LOGIN_FAILED, "addr:3", 6.0, t(6))  # the most recent, and not full again by 12 s
    # One token each spent at 0 s: full again after 12 s, so each is the same as a new source.
    verdict = budget.admit(LOGIN_FAILED, "addr:new", 12.0, t(12))
    assert verdict.bucket == "addr:new"
    assert budget.tracked_sources == 2  # addr:3 and addr:new


def test_a_source_with_a_pending_run_is_never_forgotten() -> None:
    budget = NoiseBudget(NoisePolicy(burst=1, max_sources=1, summary_after_s=60))
    budget.admit(LOGIN_FAILED, "addr:a", 0.0, t(0))
    budget.admit(LOGIN_FAILED, "addr:a", 0.0, t(0))  # counted: a run is pending
    assert budget.admit(LOGIN_FAILED, "addr:b", 30.0, t(30)).bucket == OTHER_SOURCES
    summaries = budget.due(60.0)
    assert [(s.source, s.count) for s in summaries] == [("addr:a", 1)]


def test_a_clock_that_goes_back_stands_still() -> None:
    budget = NoiseBudget(NoisePolicy(burst=1))
    budget.admit(LOGIN_FAILED, "a", 100.0, t(100))
    assert not budget.admit(LOGIN_FAILED, "a", 0.0, t(0)).journal  # no tokens from a clock going back


@pytest.mark.parametrize(
    "field", [{"rate_per_s": 0}, {"burst": 0}, {"summary_after_s": 0}, {"max_sources": -1}]
)
def test_a_policy_that_makes_no_sense_is_refused(field: dict[str, float]) -> None:
    with pytest.raises(ValueError, match="must"):
        NoisePolicy(**field)  # type: ignore[arg-type]


# --- properties ------------------------------------------------------------------------------------
CATEGORIES = (LOGIN_FAILED, FORGED_FRAME)
SOURCES = tuple(f"s{n}" for n in range(8))

events = st.lists(
    st.tuples(
        st.sampled_from(CATEGORIES),
        st.sampled_from(SOURCES),
        st.one_of(st.just(0.0), st.floats(min_value=0.0, max_value=30.0)),  # the clock's step
        st.booleans(),  # a due() call before the event (a ticker)
    ),
    max_size=400,
)
policies = st.builds(
    NoisePolicy,
    rate_per_s=st.floats(min_value=0.01, max_value=2.0),
    burst=st.integers(min_value=1, max_value=6),
    summary_after_s=st.floats(min_value=1.0, max_value=120.0),
    max_sources=st.integers(min_value=0, max_value=5),
    max_other_names=st.integers(min_value=0, max_value=4),
)


@settings(max_examples=300, deadline=None)
@given(policy=policies, sequence=events)
def test_no_count_is_lost_and_no_source_writes_more_than_its_budget(
    policy: NoisePolicy, sequence: list[tuple[str, str, float, bool]]
) -> None:
    budget = NoiseBudget(policy)
    now_s = 0.0
    seen: Counter[str] = Counter()
    journaled: Counter[str] = Counter()
    summarized: Counter[str] = Counter()
    records: defaultdict[tuple[str, str], list[float]] = defaultdict(list)  # journal entries by budget

    def take(summaries: tuple[NoiseSummary, ...] | list[NoiseSummary]) -> None:
        for summary in summaries:
            assert summary.count > 0
            summarized[summary.category] += summary.count
            records[(summary.category, summary.source)].append(now_s)

    for category, source, step_s, tick in sequence:
        now_s += step_s
        if tick:
            take(budget.due(now_s))
        verdict = budget.admit(category, source, now_s, t(now_s))
        seen[category] += 1
        take(verdict.summaries)
        if verdict.journal:
            journaled[category] += 1
            records[(category, verdict.bucket)].append(now_s)
        assert budget.tracked_sources <= policy.max_sources
    take(budget.flush())
    assert budget.pending == 0
    for category in CATEGORIES:
        assert journaled[category] + summarized[category] == seen[category]
        assert budget.counts.seen[category] == seen[category]
    # Bounded: in any window of W seconds, one budget's entries are at most its burst, its rate over W,
    # and one summary per summary_after_s (the flush at the end adds one more).
    for times in records.values():
        for start, first in enumerate(times):
            for end in range(start, len(times)):
                window_s = times[end] - first
                bound = policy.burst + policy.rate_per_s * window_s + window_s / policy.summary_after_s + 2
                assert end - start + 1 <= math.floor(bound + 1e-9)
