"""The daemon's one queue: any number of writers on the loop's thread, one reader (the engine's loop).

``asyncio.Queue`` does more than this queue needs and pays for it on every item: each ``put_nowait``
counts an unfinished task, clears an ``Event`` and walks its getters' deque; each ``get_nowait``
wakes a putter that cannot exist (the queue is unbounded), and ``get`` checks for both. The table
puts every device event, operator action and tick through the one queue (about 85 items a round of
High Card Flush), so the generic queue's book-keeping was a measured part of the table's CPU a round
(issue 28, docs/operations.md). This keeps the items in a deque and, when the reader waits, one
future for the next ``put_nowait`` to resolve.

The same methods as ``asyncio.Queue`` for what the daemon uses: ``put_nowait``, ``get``,
``get_nowait`` (``asyncio.QueueEmpty`` when empty), ``empty``, ``qsize``. No ``join`` nor
``task_done``: nothing waits for the queue to drain that way.
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Generic, TypeVar

T = TypeVar("T")


class OneReaderQueue(Generic[T]):
    """An unbounded FIFO for one reading task (a second concurrent ``get`` is refused)."""

    __slots__ = ("_items", "_waiter")

    def __init__(self) -> None:
        self._items: deque[T] = deque()
        self._waiter: asyncio.Future[None] | None = None

    def put_nowait(self, item: T) -> None:
        self._items.append(item)
        waiter = self._waiter
        if waiter is not None:
            self._waiter = None
            if not waiter.done():  # done: the reader was cancelled meanwhile
                waiter.set_result(None)

    async def get(self) -> T:
        while not self._items:
            if self._waiter is not None:
                raise RuntimeError("OneReaderQueue: a second reader waits on a one-reader queue")
            waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._waiter = waiter
            try:
                await waiter
            finally:
                if self._waiter is waiter:  # cancelled while waiting: nobody waits any more
                    self._waiter = None
        return self._items.popleft()

    def get_nowait(self) -> T:
        if not self._items:
            raise asyncio.QueueEmpty
        return self._items.popleft()

    def empty(self) -> bool:
        return not self._items

    def qsize(self) -> int:
        return len(self._items)
