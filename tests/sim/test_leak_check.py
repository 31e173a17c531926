"""The leak check itself can fail: it sees a thread, an fd, a listening port and a task left behind."""

from __future__ import annotations

import asyncio
import os
import socket
import threading

import pytest

from tests.device_harness.leaks import leaks_since, run_async, snapshot


def test_it_sees_a_file_descriptor_and_a_listening_port() -> None:
    before = snapshot()
    read_fd, write_fd = os.pipe()
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    port = listener.getsockname()[1]
    try:
        problems = leaks_since(before, settle_s=0.0)
        assert any("pipe" in problem for problem in problems)
        assert any(f"port {port} LISTEN" in problem for problem in problems)
    finally:
        os.close(read_fd)
        os.close(write_fd)
        listener.close()
    assert leaks_since(before, settle_s=0.0) == []


def test_it_sees_a_thread() -> None:
    before = snapshot()
    release = threading.Event()
    thread = threading.Thread(target=release.wait, name="forgotten-worker")
    thread.start()
    try:
        assert any("forgotten-worker" in problem for problem in leaks_since(before, settle_s=0.0))
    finally:
        release.set()
        thread.join()


def test_run_async_fails_on_a_task_left_running() -> None:
    async def leaves_a_task() -> None:
        asyncio.get_running_loop().create_task(asyncio.sleep(10), name="forgotten-task")

    with pytest.raises(AssertionError, match="forgotten-task"):
        run_async(leaves_a_task)
