"""Logging set-up: klog-like text lines or one JSON object per line.

Operators of kube-scheduler read klog (`I1122 04:30:00.123456   12345 file.py:123] msg`) and
ship logs as JSON; the extender sits next to kube-scheduler, so it speaks both. Verbosity is
klog's `-v N`, mapped onto stdlib levels by `scheduler_core.logutil.v` so the engine can log
without importing this module.
"""

from __future__ import annotations

import logging
import os
import sys
import time
from typing import IO, Any, Literal

import orjson

from scheduler_core.logutil import v, verbosity_of

LogFormat = Literal["text", "json"]

# Kubernetes logging conventions: V(4) is "debug level verbosity"; tracebacks go there.
DEBUG_V = 4

# Attributes every LogRecord has; anything else on a record came from `extra=` and is a field.
_RECORD_ATTRS = frozenset(
    logging.LogRecord("", 0, "", 0, "", None, None).__dict__.keys()
    | {"message", "asctime", "color_message", "taskName"}
)


def _severity(levelno: int) -> str:
    if levelno >= logging.CRITICAL:
        return "F"
    if levelno >= logging.ERROR:
        return "E"
    if levelno >= logging.WARNING:
        return "W"
    return "I"


def extra_fields(record: logging.LogRecord) -> dict[str, Any]:
    """The structured fields a caller attached with `extra={...}`."""
    return {k: val for k, val in record.__dict__.items() if k not in _RECORD_ATTRS}


class KlogFormatter(logging.Formatter):
    """`Lmmdd hh:mm:ss.uuuuuu threadid file:line] msg key="value"...`, as klog prints."""

    def __init__(self) -> None:
        super().__init__()
        self._pid = os.getpid()

    def format(self, record: logging.LogRecord) -> str:
        t = time.localtime(record.created)
        micros = int((record.created % 1) * 1_000_000)
        head = (
            f"{_severity(record.levelno)}{t.tm_mon:02d}{t.tm_mday:02d} "
            f"{t.tm_hour:02d}:{t.tm_min:02d}:{t.tm_sec:02d}.{micros:06d} "
            f"{self._pid:7d} {record.filename}:{record.lineno}] "
        )
        line = head + record.getMessage()
        fields = extra_fields(record)
        if fields:
            line += "".join(f" {k}={_quote(val)}" for k, val in fields.items())
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        return line


def _quote(value: Any) -> str:
    if isinstance(value, int | float | bool):
        return str(value)
    return orjson.dumps(value, default=str).decode()


class JsonFormatter(logging.Formatter):
    """One JSON object per line: ts, level, v, logger, msg, caller, then the extra fields."""

    def format(self, record: logging.LogRecord) -> str:
        doc: dict[str, Any] = {
            "ts": round(record.created, 6),
            "level": record.levelname.lower() if record.levelno > logging.INFO else "info",
            "v": verbosity_of(record.levelno),
            "logger": record.name,
            "msg": record.getMessage(),
            "caller": f"{record.filename}:{record.lineno}",
        }
        for key, val in extra_fields(record).items():
            doc.setdefault(key, val)
        if record.exc_info:
            doc["exc"] = self.formatException(record.exc_info)
        return orjson.dumps(doc, default=str).decode()


def setup_logging(
    verbosity: int, fmt: LogFormat = "text", stream: IO[str] | None = None
) -> logging.Handler:
    """Route every logger (ours, the engine's, uvicorn's) to one handler at klog verbosity.

    Returns the installed handler so that a caller (or a test) can remove it again.
    """
    handler = logging.StreamHandler(stream if stream is not None else sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json" else KlogFormatter())
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(v(verbosity))
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        lg = logging.getLogger(name)
        lg.handlers.clear()
        lg.propagate = True
        lg.setLevel(logging.NOTSET)
    election = logging.getLogger(LEADER_ELECTION_LOGGER)
    for old_filter in [f for f in election.filters if isinstance(f, DemoteInfo)]:
        election.removeFilter(old_filter)
    election.addFilter(DemoteInfo(LEADER_ELECTION_VERBOSITY))
    return handler


#: The ``kubernetes`` client's leader election logs here; see ``DemoteInfo``.
LEADER_ELECTION_LOGGER = "leaderelection"
LEADER_ELECTION_VERBOSITY = 4


class DemoteInfo(logging.Filter):
    """Re-levels a library's INFO lines to klog verbosity ``n``; warnings and errors pass.

    The client's leader election writes an INFO line on every renewal and every failed
    acquisition, one every retry period for as long as the process runs. Our controller logs
    each transition itself (started, became the leader, lost the lease), so at the default
    verbosity those repeats are noise; with ``-v 4`` they are shown as V4."""

    def __init__(self, n: int) -> None:
        super().__init__()
        self.level = v(n)

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno != logging.INFO:
            return True
        record.levelno, record.levelname = self.level, logging.getLevelName(self.level)
        return logging.getLogger().isEnabledFor(self.level)


def vlog(logger: logging.Logger, level: int, msg: str, *args: Any, **extra: Any) -> None:
    """`klog.V(level).Infof(msg, args...)`; extra keyword arguments become log fields."""
    lvl = v(level)
    if logger.isEnabledFor(lvl):
        logger.log(lvl, msg, *args, extra=extra or None, stacklevel=2)


class V:
    """`V(3).info("Queue %s is overused", q)` reads like klog and is cheap when disabled."""

    __slots__ = ("_level", "_logger")

    def __init__(self, n: int, logger: logging.Logger | None = None) -> None:
        self._level = v(n)
        self._logger = logger if logger is not None else logging.getLogger()

    def __bool__(self) -> bool:
        return self._logger.isEnabledFor(self._level)

    def info(self, msg: str, *args: Any, **extra: Any) -> None:
        if self._logger.isEnabledFor(self._level):
            self._logger.log(self._level, msg, *args, extra=extra or None, stacklevel=2)
