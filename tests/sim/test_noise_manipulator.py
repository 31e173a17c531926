from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim_devices.noise import NoiseManipulator, NoiseRates


@given(st.binary(max_size=300), st.integers(0, 2**32))
@settings(max_examples=200, deadline=None)
def test_a_clean_line_delivers_every_byte_unchanged(data: bytes, seed: int) -> None:
    assert b"".join(NoiseManipulator(NoiseRates(split=0.0), seed=seed)(data)) == data


@given(st.binary(min_size=2, max_size=300), st.integers(0, 2**32))
@settings(max_examples=200, deadline=None)
def test_splitting_changes_the_chunks_never_the_bytes(data: bytes, seed: int) -> None:
    chunks = NoiseManipulator(NoiseRates(split=1.0), seed=seed)(data)
    assert b"".join(chunks) == data
    assert len(chunks) >= 2
    assert all(chunks)


def test_rates_are_roughly_what_was_asked_and_the_same_seed_repeats_the_damage() -> None:
    data = bytes(range(256)) * 400  # 102,400 bytes
    rates = NoiseRates(flip=0.01, drop=0.005, duplicate=0.005)
    first = NoiseManipulator(rates, seed=5)
    out = b"".join(first(data))
    counters = first.counters
    assert 0.008 < counters.flipped / len(data) < 0.012
    assert 0.0035 < counters.dropped / len(data) < 0.0065
    assert 0.0035 < counters.duplicated / len(data) < 0.0065
    assert len(out) == len(data) - counters.dropped + counters.duplicated
    assert b"".join(NoiseManipulator(rates, seed=5)(data)) == out


def test_a_rate_that_is_not_a_probability_is_refused() -> None:
    with pytest.raises(ValueError, match="flip"):
        NoiseRates(flip=1.5)
