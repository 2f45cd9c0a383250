"""Cost of one JSON log line: app/telemetry/logs.py's JsonFormatter against python-json-logger's.

Not a dependency of the project. Run from the repository root with the project's venv:

    .venv/bin/pip install --target /tmp/pjl python-json-logger
    PYTHONPATH=/tmp/pjl:. .venv/bin/python docs/measurements/log_formatters.py

Prints the median of 7 rounds of 20,000 `format()` calls on the same record (a message with
two `extra=` fields, the shape of the extender's per-decision lines), and one line of each.
"""

from __future__ import annotations

import logging
import statistics
import timeit

from pythonjsonlogger.json import JsonFormatter as LibraryJsonFormatter
from pythonjsonlogger.orjson import OrjsonFormatter as LibraryOrjsonFormatter

from app.telemetry.logs import JsonFormatter

ROUNDS, CALLS = 7, 20_000


def record() -> logging.LogRecord:
    rec = logging.LogRecord(
        "app.verbs.filter",
        logging.INFO,
        "routes_filter.py",
        42,
        "filter %s: %d nodes",
        ("p", 5),
        None,
    )
    rec.pod = "team/p"
    rec.queue = "a"
    return rec


def main() -> None:
    rec = record()
    fields = "%(levelname)s %(name)s %(message)s %(filename)s %(lineno)d"
    formatters = {
        "app.telemetry.logs.JsonFormatter (orjson)": JsonFormatter(),
        "python-json-logger JsonFormatter (json)": LibraryJsonFormatter(fields),
        "python-json-logger OrjsonFormatter": LibraryOrjsonFormatter(fields),
    }
    for name, formatter in formatters.items():
        runs = timeit.repeat(lambda f=formatter: f.format(rec), number=CALLS, repeat=ROUNDS)
        per_call = statistics.median(runs) / CALLS * 1e6
        print(f"{name:42s} {per_call:6.2f} µs/line   {formatter.format(rec)}")


if __name__ == "__main__":
    main()
