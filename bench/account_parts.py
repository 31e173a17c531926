"""Run a module with the floor service's parts marked for callgrind: each part's calls go through a C
function of its own (``ft_mark_<part>``), so callgrind's inclusive count for that function is the
instructions the part spent, Python frames and all (Python 3.11's frames are invisible to callgrind:
every Python function is ``_PyEval_EvalFrameDefault``).

    python bench/account_parts.py -m MODULE [ARGS ...]

A plain function's call goes through its marker; a coroutine's each step (each ``send`` or ``throw``
from the task that awaits it, up to its next suspension) does, so what it waits for (another task's
work, the loop's) is not counted in it. The markers are a small C extension built here with gcc (a
bench tool's, not the product's); each marked call costs the call around it (a few hundred
instructions, counted in the caller: compare a run without the markers). Used by
bench/bench_floor_cpu.py ``--wrap callgrind-marked`` (docs/floor.md "Twelfth stop: where the
service's whole CPU goes").
"""

from __future__ import annotations

import functools
import importlib
import runpy
import subprocess
import sys
import sysconfig
import tempfile
import types
from collections.abc import Callable, Generator
from pathlib import Path
from typing import Any

# Each part: (module, attribute path, kind); "sync" a plain function, "coroutine" a coroutine function.
PARTS: dict[str, tuple[str, str, str]] = {
    "loop_run_once": ("asyncio.base_events", "BaseEventLoop._run_once", "sync"),
    "loop_handle": ("asyncio.events", "Handle._run", "sync"),
    "consume": ("controller.floor.service", "FloorService._consume", "coroutine"),
    "take_all": ("controller.floor.service", "FloorService._take_all", "coroutine"),
    "read_batch_tables": ("controller.floor.service", "FloorService._read_batch_tables", "coroutine"),
    "write_batch": ("controller.floor.service", "write_batch", "coroutine"),
    "check_fence": ("controller.floor.service", "check_fence", "coroutine"),
    "apply_releases": ("controller.floor.service", "FloorService.apply_releases", "coroutine"),
    "reconcile_progressive": ("controller.floor.service", "FloorService.reconcile_progressive", "coroutine"),
    "psycopg_wait": ("psycopg", "AsyncConnection.wait", "coroutine"),
    "nats_read_loop": ("nats.aio.client", "Client._read_loop", "coroutine"),
    "nats_parse": ("controller.floor.intake", "_FloorParser.parse", "coroutine"),
    "nats_flusher": ("nats.aio.client", "Client._flusher", "coroutine"),
    "nats_ping": ("nats.aio.client", "Client._ping_interval", "coroutine"),
    "puller_fetch": ("controller.floor.puller", "Puller.fetch", "coroutine"),
    "acks": ("controller.floor.intake", "FloorClient.publish_empty", "coroutine"),
    "in_progress_keep": ("controller.floor.in_progress", "_keep", "coroutine"),
    "ssl_buffer_updated": ("asyncio.sslproto", "SSLProtocol.buffer_updated", "sync"),
    "ssl_write_appdata": ("asyncio.sslproto", "SSLProtocol._write_appdata", "sync"),
    "surveillance_loop": ("controller.floor.service", "surveillance_loop", "coroutine"),
    "surveillance_publish_pending": ("controller.floor.surveillance", "publish_pending", "coroutine"),
    # The publisher's own connection's waits, told from the intake's (``_publisher_connection``).
    "publisher_psycopg_wait": ("psycopg", "AsyncConnection.wait", "publisher"),
    "logging": ("structlog._base", "BoundLoggerBase._proxy_to_logger", "sync"),
}

_C_SOURCE = (
    "#define PY_SSIZE_T_CLEAN\n#include <Python.h>\n"
    + "".join(
        f"static PyObject *ft_mark_{name}(PyObject *self, PyObject *const *a, Py_ssize_t n) "
        "{ return PyObject_Call(a[0], a[1], a[2]); }\n"
        for name in PARTS
    )
    + "static PyMethodDef methods[] = {\n"
    + "".join(
        f'{{"{name}", (PyCFunction)(void (*)(void))ft_mark_{name}, METH_FASTCALL, NULL}},\n' for name in PARTS
    )
    + "{NULL, NULL, 0, NULL}};\n"
    + 'static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_ft_marks", NULL, -1, methods};\n'
    + "PyMODINIT_FUNC PyInit__ft_marks(void) { return PyModule_Create(&module); }\n"
)


def _markers() -> dict[str, Callable[..., Any]]:
    """Each part's C marker, callable from Python with (function, args tuple, kwargs dict): a C
    extension's function called by the interpreter directly (through ctypes, libffi's call moved the
    stack in a way callgrind did not take for a call, and the markers' counts were lost)."""
    where = Path(tempfile.mkdtemp(prefix="flushtable-marks-"))
    (where / "marks.c").write_text(_C_SOURCE)
    include = sysconfig.get_paths()["include"]
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    # -O0: no tail call, so each marker stays a frame of its own on callgrind's stack.
    subprocess.run(
        [
            "gcc",
            "-O0",
            "-shared",
            "-fPIC",
            f"-I{include}",
            "-o",
            str(where / f"_ft_marks{suffix}"),
            str(where / "marks.c"),
        ],
        check=True,
    )
    sys.path.insert(0, str(where))
    module = importlib.import_module("_ft_marks")
    return {name: getattr(module, name) for name in PARTS}


class _Steps:
    """A coroutine driven step by step, each step through ``mark``."""

    __slots__ = ("coroutine", "mark")

    def __init__(self, coroutine: Any, mark: Callable[..., Any]) -> None:
        self.coroutine, self.mark = coroutine, mark

    def __await__(self) -> Generator[Any, Any, Any]:
        send, throw, mark = self.coroutine.send, self.coroutine.throw, self.mark
        value: Any = None
        error: BaseException | None = None
        while True:
            try:
                yielded = mark(send, (value,), {}) if error is None else mark(throw, (error,), {})
            except StopIteration as stop:
                return stop.value
            try:
                value, error = (yield yielded), None
            except BaseException as thrown:
                value, error = None, thrown


def _wrap(function: Callable[..., Any], kind: str, mark: Callable[..., Any]) -> Callable[..., Any]:
    if kind == "sync":

        @functools.wraps(function)
        def marked(*args: Any, **kwargs: Any) -> Any:
            return mark(function, args, kwargs)

        return marked

    @functools.wraps(function)
    async def marked_steps(*args: Any, **kwargs: Any) -> Any:
        return await _Steps(function(*args, **kwargs), mark)

    return marked_steps


def _publisher_connection(original_wait: Callable[..., Any], mark: Callable[..., Any]) -> None:
    """The surveillance publisher's connection made a subclass whose ``wait`` has a marker of its own
    (controller/floor/session.py makes it through its module's ``psycopg``)."""
    import psycopg  # noqa: PLC0415

    from controller.floor import session  # noqa: PLC0415

    class PublisherConnection(psycopg.AsyncConnection):
        wait = _wrap(original_wait, "coroutine", mark)

    setattr(session, "psycopg", types.SimpleNamespace(AsyncConnection=PublisherConnection))  # noqa: B010


def install() -> None:
    marks = _markers()
    import psycopg  # noqa: PLC0415

    _publisher_connection(psycopg.AsyncConnection.wait, marks["publisher_psycopg_wait"])
    for name, (module_name, path, kind) in PARTS.items():
        if kind == "publisher":
            continue
        __import__(module_name)
        owner: Any = sys.modules[module_name]
        *owners, attribute = path.split(".")
        for step in owners:
            owner = getattr(owner, step)
        setattr(owner, attribute, _wrap(getattr(owner, attribute), kind, marks[name]))


def main() -> None:
    if len(sys.argv) < 3 or sys.argv[1] != "-m":
        raise SystemExit("usage: account_parts.py -m MODULE [ARGS ...]")
    module = sys.argv[2]
    sys.argv = [module, *sys.argv[3:]]
    install()
    runpy.run_module(module, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
