"""structlog, configured once for the whole process (the pypi/warehouse way).

One shared processor list; JSON lines when the output is not a terminal (production: journald, files,
log shippers), the console renderer on a terminal. Context bound once with ``bind_table`` /
``bind_round`` / ``bind_device`` (contextvars, so each asyncio task keeps its own) is merged into every
event. Event names are snake_case and are the journal's entry kinds where there is one (``card_dealt``,
``bets_locked``, ``device_lost``).
"""

from __future__ import annotations

import json
import logging
import sys
from typing import Any, TextIO

import structlog
from structlog.typing import Processor

SHARED_PROCESSORS: list[Processor] = [
    structlog.contextvars.merge_contextvars,
    structlog.processors.add_log_level,
    structlog.processors.TimeStamper(fmt="iso", utc=True),
    structlog.processors.StackInfoRenderer(),
]

# One encoder for every log line (json.dumps with options builds a new one per call: measurable at
# the journal's rate of about 100 lines a round). default=str: a value JSON cannot hold is logged as
# its text, never an error.
_LINE_ENCODER = json.JSONEncoder(sort_keys=True, default=str)


def _json_line(event_dict: Any, **_ignored: Any) -> str:
    return _LINE_ENCODER.encode(event_dict)


_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING, "error": logging.ERROR}


class _StandardError:
    """Standard error as it is when written to, not when configured (tests and daemons swap it)."""

    def write(self, text: str) -> int:
        return sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()

    def isatty(self) -> bool:
        return sys.stderr.isatty()


def configure_logging(
    *, level: str = "info", json_lines: bool | None = None, stream: TextIO | None = None
) -> None:
    """Send structlog events to ``stream`` (standard error by default, so command output stays clean).

    ``json_lines`` None chooses by the stream: JSON lines unless it is a terminal."""
    output: Any = stream if stream is not None else _StandardError()
    if level not in _LEVELS:
        raise ValueError(f"log level must be one of {', '.join(_LEVELS)}, not {level!r}")
    as_json = not _is_terminal(output) if json_lines is None else json_lines
    renderer: Processor
    if as_json:
        final: list[Processor] = [
            structlog.processors.format_exc_info,
            structlog.processors.JSONRenderer(serializer=_json_line),
        ]
    else:
        renderer = structlog.dev.ConsoleRenderer(colors=_is_terminal(output))
        final = [renderer]
    structlog.configure(
        processors=[*SHARED_PROCESSORS, *final],
        wrapper_class=structlog.make_filtering_bound_logger(_LEVELS[level]),
        logger_factory=structlog.PrintLoggerFactory(file=output),
        cache_logger_on_first_use=False,
    )


def configure_logging_for(level: str, log_format: str, stream: TextIO | None = None) -> None:
    """From the configuration's [logging]: format "auto", "json" or "console"; ``stream`` a log file
    (``flushtable run --log-file``), else standard error."""
    json_lines = {"auto": None, "json": True, "console": False}[log_format]
    configure_logging(level=level, json_lines=json_lines, stream=stream)


def _is_terminal(stream: Any) -> bool:
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def bind_table(table_id: str) -> None:
    structlog.contextvars.bind_contextvars(table_id=table_id)


def bind_round(round_id: str | None) -> None:
    """Bind the current round (None: between rounds)."""
    if round_id is None:
        structlog.contextvars.unbind_contextvars("round_id")
    else:
        structlog.contextvars.bind_contextvars(round_id=round_id)


def bind_device(device: str) -> None:
    structlog.contextvars.bind_contextvars(device=device)


def get_logger(name: str, **initial: Any) -> Any:
    """A structlog logger; ``name`` says which part of the daemon speaks."""
    return structlog.get_logger(name, **initial)


async def log_nats_error(error: Exception) -> None:
    """Every NATS client's ``error_cb``: one structured line. nats-py's own default logs the error with
    its traceback through the standard logging module, which reached the operator's console (a TLS
    close racing the server's last bytes as a demo or a table stopped: `APPLICATION_DATA_AFTER_CLOSE_
    NOTIFY`); the connection's own handling (reconnect, the caller's retry) is unchanged."""
    text = str(error).strip().splitlines()[0] if str(error).strip() else ""
    structlog.get_logger("flushtable.nats").warning("nats_error", error=f"{type(error).__name__}: {text}")
