"""Reconnection delays: exponential backoff with jitter and a cap, reset after a good handshake."""

from __future__ import annotations

import random
from dataclasses import dataclass, field


@dataclass(slots=True)
class Backoff:
    """``next_delay_s()`` gives initial, initial*multiplier, ... up to ``max_s``, each spread by
    +/- ``jitter`` (a fraction) so a table's devices do not all retry in step after a power cut."""

    initial_s: float = 0.1
    max_s: float = 5.0
    multiplier: float = 2.0
    jitter: float = 0.2
    rng: random.Random = field(default_factory=random.Random)
    attempts: int = 0

    def __post_init__(self) -> None:
        if not 0 < self.initial_s <= self.max_s:
            raise ValueError(
                f"backoff initial_s {self.initial_s} must be positive and at most max_s {self.max_s}"
            )
        if self.multiplier < 1:
            raise ValueError(f"backoff multiplier {self.multiplier} must be at least 1")
        if not 0 <= self.jitter < 1:
            raise ValueError(f"backoff jitter {self.jitter} must be a fraction in [0, 1)")

    def next_delay_s(self) -> float:
        base = min(self.max_s, self.initial_s * self.multiplier ** min(self.attempts, 64))
        self.attempts += 1
        spread = base * self.jitter
        return min(self.max_s, max(0.0, base + self.rng.uniform(-spread, spread)))

    def reset(self) -> None:
        self.attempts = 0
