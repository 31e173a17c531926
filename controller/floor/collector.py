"""The floor service process's garbage collector (docs/floor.md "Tenth stop: the collector").

A floor service allocates a few short-lived objects for each message (its decode, its rows) and frees
nearly all of them by reference counting; what it keeps (the tables' projections, the modules) is made
at its start or grows slowly. CPython's default thresholds (700, 10, 10) still ran a young collection
every 700 net allocations and an old one that walked every object the process held: 4-6% of the
service's CPU in a 300-table catch-up (0.12-0.15 s of 2.2-2.7 s), against 0.02 s with the thresholds
below. What is made at the start is frozen out of the collector's walks altogether (``gc.freeze``).
Cycles are still collected, only later: a young collection every YOUNG_THRESHOLD net allocations.
"""

from __future__ import annotations

import gc

import structlog

__all__ = ["YOUNG_THRESHOLD", "tune_collector"]

YOUNG_THRESHOLD = 50_000  # net container allocations between young collections (CPython's default: 700)
OLDER_THRESHOLD = 20  # young (then middle) collections before the next generation's (default: 10)


def tune_collector() -> None:
    """Freeze what the process holds now and space the collections out; called once the service's
    modules and configuration are loaded, before its loop starts. Logged (``floor_collector``), so that
    a process's settings can be read from its log."""
    gc.collect()  # what is garbage now is not frozen with the rest
    gc.freeze()
    gc.set_threshold(YOUNG_THRESHOLD, OLDER_THRESHOLD, OLDER_THRESHOLD)
    structlog.get_logger("flushtable.floor").info(
        "floor_collector", thresholds=list(gc.get_threshold()), frozen_objects=gc.get_freeze_count()
    )
