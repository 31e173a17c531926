"""The daemon's one queue (controller/one_queue.py): the part of ``asyncio.Queue`` the engine's loop
uses, without its book-keeping (issue 28). Items come out in the order they went in; a waiting reader
wakes on the next put; a reader cancelled while waiting leaves nothing behind (the next get waits
again, the next put is not lost); a second concurrent reader is refused rather than starved."""

from __future__ import annotations

import asyncio

import pytest

from controller.one_queue import OneReaderQueue

BOUND_S = 10.0  # a bound on every wait, never a pace


def test_items_come_out_in_order_and_empty_is_told() -> None:
    queue: OneReaderQueue[int] = OneReaderQueue()
    assert queue.empty()
    with pytest.raises(asyncio.QueueEmpty):
        queue.get_nowait()
    for number in range(5):
        queue.put_nowait(number)
    assert queue.qsize() == 5
    assert [queue.get_nowait() for _ in range(5)] == [0, 1, 2, 3, 4]
    assert queue.empty()


def test_a_waiting_reader_wakes_on_the_next_put() -> None:
    async def scenario() -> list[str]:
        queue: OneReaderQueue[str] = OneReaderQueue()
        reader = asyncio.create_task(queue.get())
        await asyncio.sleep(0)  # the reader is waiting now
        assert not reader.done()
        asyncio.get_running_loop().call_soon(queue.put_nowait, "card")
        first = await asyncio.wait_for(reader, BOUND_S)
        queue.put_nowait("key")  # no reader waiting: kept
        return [first, await asyncio.wait_for(queue.get(), BOUND_S)]

    assert asyncio.run(scenario()) == ["card", "key"]


def test_a_reader_cancelled_while_waiting_leaves_nothing_behind() -> None:
    async def scenario() -> str:
        queue: OneReaderQueue[str] = OneReaderQueue()
        reader = asyncio.create_task(queue.get())
        await asyncio.sleep(0)
        reader.cancel()
        with pytest.raises(asyncio.CancelledError):
            await reader
        queue.put_nowait("after")  # resolves no stale waiter: the item stays for the next reader
        assert queue.qsize() == 1
        return await asyncio.wait_for(queue.get(), BOUND_S)

    assert asyncio.run(scenario()) == "after"


def test_a_second_concurrent_reader_is_refused() -> None:
    async def scenario() -> None:
        queue: OneReaderQueue[int] = OneReaderQueue()
        first = asyncio.create_task(queue.get())
        await asyncio.sleep(0)
        with pytest.raises(RuntimeError, match="second reader"):
            await queue.get()
        queue.put_nowait(7)
        assert await asyncio.wait_for(first, BOUND_S) == 7

    asyncio.run(scenario())
