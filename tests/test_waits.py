"""controller.waits: a bounded wait on an event that never loses a cancellation (no I/O, no sleep)."""

from __future__ import annotations

import asyncio
import random

from controller.waits import ReconnectDelay, raise_if_cancelled, wait_event


def test_set_within_the_bound_is_true_and_a_bound_passed_is_false() -> None:
    async def main() -> tuple[bool, bool]:
        event = asyncio.Event()
        loop = asyncio.get_running_loop()
        loop.call_soon(event.set)
        was_set = await wait_event(event, 60.0)
        event.clear()
        return was_set, await wait_event(event, 0.0)

    assert asyncio.run(main()) == (True, False)


def test_a_cancel_in_the_turn_the_event_is_set_ends_a_loop_around_the_wait() -> None:
    """The losing interleaving, made certain: the event is set and the waiting task cancelled in the
    same loop turn (an uplink notified as ``asyncio.run`` cancels everything after a failure). Built on
    ``asyncio.wait_for(event.wait(), ...)`` the wait returned the event's True, the cancellation was lost
    and the loop went on for ever (tests/floor/test_failures.py's 200-table test hung so after failing)."""

    async def main() -> tuple[bool, int]:
        event = asyncio.Event()
        turns = 0

        async def poll_until_cancelled() -> None:
            nonlocal turns
            while True:
                await wait_event(event, 60.0)
                turns += 1
                event.clear()

        task = asyncio.create_task(poll_until_cancelled())
        for _ in range(3):  # the task (and any task it makes) is waiting on the event
            await asyncio.sleep(0)
        event.set()
        task.cancel()
        done, _ = await asyncio.wait({task}, timeout=30)
        if not done:  # the cancellation was lost: end the test's loop by hand, and fail
            task.cancel()
            await asyncio.wait({task}, timeout=30)
        return task in done and task.cancelled(), turns

    ended, turns = asyncio.run(main())
    assert ended
    assert turns == 0  # cancelled in the wait, not after one more turn of the loop


def test_a_loop_that_checks_ends_when_a_library_swallowed_its_cancel() -> None:
    """nats-py waits for a request's reply with ``asyncio.wait_for``, which drops a cancellation that
    comes in the turn the reply does (Python 3.11). Made certain here: the reply and the cancel in one
    turn. The uplink's and the floor service's loops check ``raise_if_cancelled`` each turn; without it
    they went on after ``asyncio.run`` cancelled them (63 of 200 uplinks in the failed 200-table test),
    and the test never ended."""

    async def main() -> tuple[bool, int]:
        loop = asyncio.get_running_loop()
        replies: list[asyncio.Future[int]] = []
        turns = 0

        async def request() -> int:  # as nats-py's request waits for its reply
            reply: asyncio.Future[int] = loop.create_future()
            replies.append(reply)
            return await asyncio.wait_for(reply, 60.0)

        async def publish_until_cancelled() -> None:
            nonlocal turns
            while True:
                raise_if_cancelled()
                await request()
                turns += 1

        task = asyncio.create_task(publish_until_cancelled())
        for _ in range(3):
            await asyncio.sleep(0)
        replies[-1].set_result(1)
        task.cancel()
        done, _ = await asyncio.wait({task}, timeout=30)
        if not done:
            for reply in replies:
                reply.cancel()
            task.cancel()
            await asyncio.wait({task}, timeout=30)
        return task in done and task.cancelled(), turns

    ended, turns = asyncio.run(main())
    assert ended
    assert turns == 1  # the reply was taken (the library's doing), then the loop ended at its check


class _CountingRandom(random.Random):
    """A seeded Random that counts its draws (each wait draws its jitter once)."""

    def __init__(self) -> None:
        super().__init__(7)
        self.draws = 0

    def random(self) -> float:
        self.draws += 1
        return super().random()


def test_the_reconnect_delay_doubles_to_its_cap_draws_once_a_wait_and_resets() -> None:
    """The one reconnect policy of the uplink and both ends of the linked progressive: a stop already
    set ends each wait at once, so the test waits for nothing."""

    async def main() -> tuple[list[float], float, int]:
        stop = asyncio.Event()
        stop.set()
        rng = _CountingRandom()
        retry = ReconnectDelay(initial_s=0.25, max_s=1.5, rng=rng)
        seen = [retry.next_s]
        for _ in range(4):
            await retry.wait(stop)
            seen.append(retry.next_s)
        retry.reset()
        return seen, retry.next_s, rng.draws

    assert asyncio.run(main()) == ([0.25, 0.5, 1.0, 1.5, 1.5], 0.25, 4)
