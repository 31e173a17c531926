"""A line-noise manipulator: flip, drop, duplicate and split bytes at set rates, reproducibly.

It sits between a simulated device's firmware and its port (pty, TCP, USB or sim), one instance per
direction, like pymodbus' NullModem manipulator: a chunk of bytes goes in, the chunks that reach the
other side come out. Rates are probabilities per byte (flip, drop, duplicate) or per chunk (split).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class NoiseRates:
    """Per-byte probabilities of each kind of damage; 0.0 everywhere means a clean line."""

    flip: float = 0.0  # one random bit of the byte inverted
    drop: float = 0.0  # the byte never arrives
    duplicate: float = 0.0  # the byte arrives twice
    split: float = 0.0  # per chunk: delivered in two or more pieces (changes timing, not content)

    def __post_init__(self) -> None:
        for name in ("flip", "drop", "duplicate", "split"):
            rate = getattr(self, name)
            if not 0.0 <= rate <= 1.0:
                raise ValueError(f"noise rate {name}: {rate} is not a probability in 0..1")

    @property
    def clean(self) -> bool:
        return self.flip == self.drop == self.duplicate == self.split == 0.0


@dataclass(slots=True)
class NoiseCounters:
    bytes_in: int = 0
    flipped: int = 0
    dropped: int = 0
    duplicated: int = 0
    splits: int = 0


@dataclass(slots=True)
class NoiseManipulator:
    """Damages a byte stream at ``rates``; the same seed gives the same damage."""

    rates: NoiseRates = field(default_factory=NoiseRates)
    seed: int | None = None
    counters: NoiseCounters = field(default_factory=NoiseCounters)
    _rng: random.Random = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._rng = random.Random(self.seed)

    def __call__(self, data: bytes) -> list[bytes]:
        """Return the chunks that arrive for ``data`` sent as one chunk (possibly none)."""
        self.counters.bytes_in += len(data)
        if self.rates.clean or not data:
            return [data] if data else []
        rng = self._rng
        rates = self.rates
        out = bytearray()
        for byte in data:
            if rates.drop and rng.random() < rates.drop:
                self.counters.dropped += 1
                continue
            value = byte
            if rates.flip and rng.random() < rates.flip:
                value ^= 1 << rng.randrange(8)
                self.counters.flipped += 1
            out.append(value)
            if rates.duplicate and rng.random() < rates.duplicate:
                out.append(value)
                self.counters.duplicated += 1
        if not out:
            return []
        if rates.split and len(out) > 1 and rng.random() < rates.split:
            self.counters.splits += 1
            cuts = sorted(rng.sample(range(1, len(out)), k=min(len(out) - 1, rng.randint(1, 3))))
            pieces: list[bytes] = []
            start = 0
            for cut in [*cuts, len(out)]:
                pieces.append(bytes(out[start:cut]))
                start = cut
            return pieces
        return [bytes(out)]
