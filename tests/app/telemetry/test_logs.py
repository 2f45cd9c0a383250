"""klog-like verbosity and the text / JSON log formats."""

from __future__ import annotations

import io
import logging
import os
import re

import orjson

from app.telemetry.logs import V, setup_logging, vlog
from scheduler_core.logutil import v, verbosity_of


def test_v_maps_klog_verbosity_to_stdlib_levels() -> None:
    assert v(0) == logging.INFO
    assert v(3) == logging.INFO - 3
    assert v(10) == logging.DEBUG
    assert v(99) == logging.DEBUG and v(-1) == logging.INFO
    assert logging.getLevelName(v(3)) == "V3"
    assert verbosity_of(v(5)) == 5 and verbosity_of(logging.ERROR) == 0


def test_verbosity_gates_v_levels(restore_root: None) -> None:
    out = io.StringIO()
    setup_logging(3, "text", stream=out)
    log = logging.getLogger("scheduler_core.plugins.proportion")
    vlog(log, 3, "Queue <%s> is overused", "q1")
    vlog(log, 4, "hidden at -v 3")
    V(2, log).info("shown at V(2)")
    V(5, log).info("hidden at V(5)")
    assert bool(V(3)) and not bool(V(4))
    text = out.getvalue()
    assert "Queue <q1> is overused" in text and "shown at V(2)" in text
    assert "hidden" not in text


def test_text_format_is_klog_like(restore_root: None) -> None:
    out = io.StringIO()
    setup_logging(0, "text", stream=out)
    log = logging.getLogger("app.test")
    log.info("hello %s", "world", extra={"queue": "q1", "nodes": 3})
    log.warning("careful")
    log.error("broken")
    lines = out.getvalue().splitlines()
    pid = os.getpid()
    pattern = r"^([IWEF])(\d{4}) (\d{2}:\d{2}:\d{2}\.\d{6}) +(\d+) test_logs\.py:\d+\] (.*)$"
    parsed = [re.match(pattern, line) for line in lines]
    assert all(parsed), lines
    assert [m.group(1) for m in parsed if m] == ["I", "W", "E"]
    assert all(int(m.group(4)) == pid for m in parsed if m)
    first = parsed[0]
    assert first is not None and first.group(5) == 'hello world queue="q1" nodes=3'


def test_json_format_emits_one_parseable_object_per_line(restore_root: None) -> None:
    out = io.StringIO()
    setup_logging(4, "json", stream=out)
    log = logging.getLogger("app.verbs")
    log.info("served", extra={"verb": "filter", "nodes": 5000})
    vlog(log, 4, "detail %d", 7, pod="ns/p")
    try:
        raise ValueError("bad\nthing")
    except ValueError:
        log.exception("failed")
    lines = out.getvalue().splitlines()
    assert len(lines) == 3
    docs = [orjson.loads(line) for line in lines]
    assert docs[0]["msg"] == "served" and docs[0]["level"] == "info" and docs[0]["v"] == 0
    assert docs[0]["logger"] == "app.verbs"
    assert docs[0]["verb"] == "filter" and docs[0]["nodes"] == 5000
    assert isinstance(docs[0]["ts"], float)
    assert docs[1]["msg"] == "detail 7" and docs[1]["v"] == 4 and docs[1]["pod"] == "ns/p"
    assert docs[1]["caller"].startswith("test_logs.py:")
    assert docs[2]["level"] == "error" and "ValueError: bad" in docs[2]["exc"]


def test_setup_logging_routes_uvicorn_through_the_root_handler(restore_root: None) -> None:
    out = io.StringIO()
    handler = setup_logging(0, "json", stream=out)
    logging.getLogger("uvicorn.error").info("Started server process")
    assert logging.getLogger().handlers == [handler]
    assert orjson.loads(out.getvalue().splitlines()[0])["logger"] == "uvicorn.error"


def test_leader_election_library_info_lines_show_only_from_verbosity_4(restore_root: None) -> None:
    election = logging.getLogger("leaderelection")
    out = io.StringIO()
    setup_logging(2, "text", stream=out)
    election.info("leader me has successfully acquired lease")
    election.warning("Failed to update lock")
    assert "successfully acquired" not in out.getvalue()
    assert "Failed to update lock" in out.getvalue()

    out = io.StringIO()
    setup_logging(4, "text", stream=out)
    election.info("leader me has successfully acquired lease")
    assert "successfully acquired" in out.getvalue()
    assert sum(isinstance(f, logging.Filter) for f in election.filters) == 1
