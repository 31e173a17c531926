"""What a partitioned floor worker owns and how its commits are fenced (docs/floor.md "Partitioned
floor workers"), as the service's parts receive it: which tables are the service's, and the lease check
each commit makes. Both absent on a one-worker floor (every table, no check).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from controller.floor.store import Connection

__all__ = ["Fence", "Fenced", "Owns", "check_fence"]


class Fenced(Exception):
    """A partitioned worker's commit refused by PostgreSQL: its lease on the partition is no longer the
    newest (controller/floor/workers.py). The batch is rolled back and the partition's service ends."""


# A partitioned worker's check, run inside each commit's transaction (raises Fenced); None: no partitions.
Fence = Callable[[Connection], Awaitable[None]]
# Whether a table is this service's (its partition's); None: every table is.
Owns = Callable[[str], bool]


async def check_fence(fence: Fence | None, connection: Connection) -> None:
    """A partitioned worker's lease check, in the commit's own transaction (raises Fenced)."""
    if fence is not None:
        await fence(connection)
