"""`queue-extender serve`: flags, settings, banner, and a real start/stop of the server."""

from __future__ import annotations

import argparse
import shlex
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
import uvicorn
from prometheus_client.parser import text_string_to_metric_families

from app.backend.build import Built
from app.cli.serve import backend_from_args, banner, build_servers, run_serve
from app.cli.serve_flags import (
    add_serve_parser,
    listener_limits,
    listening_from_args,
    settings_from_args,
)
from app.serving.listeners import serve_all
from tests.ports import free_port

from ..fake_backend import FakeBackend


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="queue-extender")
    add_serve_parser(parser.add_subparsers(dest="command", required=True))
    return parser.parse_args(["serve", *argv])


def test_defaults() -> None:
    args = parse()
    assert (args.host, args.port, args.url_prefix) == ("127.0.0.1", 8888, "/")
    assert (args.filter_verb, args.prioritize_verb, args.preempt_verb) == (
        "filter",
        "prioritize",
        "preempt",
    )
    assert args.on_error == "fail" and args.max_body_bytes == 8 * 1024 * 1024  # fail-closed
    assert args.scheduler_names == ["queue-scheduler"] and args.assume_ttl == 30.0
    assert args.refresh_interval == 0.0  # the verbs decide on the latest event
    assert args.verbosity == 0 and args.log_format == "text"
    assert not args.in_cluster and args.kubeconfig is None and args.cluster is None
    assert not args.demo


def test_all_flags_reach_the_settings() -> None:
    args = parse(
        "--host", "0.0.0.0", "--port", "9443", "--url-prefix", "/scheduler",
        "--filter-verb", "f", "--prioritize-verb", "p", "--preempt-verb", "e",
        "--conf", "volcano.conf", "--kubeconfig", "kc", "--scheduler-names", "a, b",
        "--manage-annotated", "--assume-ttl", "12.5", "--on-error", "pass",
        "--max-body-bytes", "1000", "--token-file", "tok", "--metrics-auth",
        "-v", "5", "--log-format", "json",
    )  # fmt: skip
    s = settings_from_args(args)
    assert (s.url_prefix, s.filter_verb, s.prioritize_verb, s.preempt_verb) == (
        "/scheduler",
        "f",
        "p",
        "e",
    )
    assert s.on_error == "pass" and s.max_body_bytes == 1000
    assert s.token_file == "tok" and s.metrics_auth
    assert args.scheduler_names == ["a", "b"] and args.manage_annotated
    assert args.conf == "volcano.conf" and args.kubeconfig == "kc"
    assert args.verbosity == 5 and args.log_format == "json" and args.assume_ttl == 12.5


@pytest.mark.parametrize(
    "argv",
    [
        ["--kubeconfig", "a", "--in-cluster"],
        ["--demo", "--cluster", "c.yaml"],
        ["--demo", "--in-cluster"],
        ["--demo", "--kubeconfig", "kc"],
        ["--on-error", "ignore"],
        ["-v", "11"],
        ["--max-body-bytes", "0"],
        ["--log-format", "xml"],
    ],
)
def test_bad_flags_are_refused(argv: list[str]) -> None:
    with pytest.raises(SystemExit):
        parse(*argv)


@pytest.mark.parametrize(
    ("flag", "value", "message"),
    [
        ("--port", "70000", "port must be between 1 and 65535, not 70000"),
        ("--port", "0", "port must be between 1 and 65535, not 0"),
        ("--port", "-1", "port must be between 1 and 65535, not -1"),
        ("--port", "http", "'http' is not an integer"),
        ("--assume-ttl", "-5", "must be more than 0 seconds, not -5"),
        ("--assume-ttl", "0", "must be more than 0 seconds, not 0"),
        ("--assume-ttl", "nan", "'nan' is not a finite number of seconds"),
        ("--refresh-interval", "-0.5", "must be 0 seconds or more, not -0.5"),
        ("--refresh-interval", "inf", "'inf' is not a finite number of seconds"),
        ("--refresh-interval", "soon", "'soon' is not a number of seconds"),
        ("--max-body-bytes", "-1", "must be a positive integer, not -1"),
        ("--max-body-bytes", "1e6", "'1e6' is not an integer"),
        ("-v", "11", "verbosity must be between 0 and 10, not 11"),
        ("--scheduler-names", "", "at least one scheduler name is required"),
        ("--scheduler-names", " , ", "at least one scheduler name is required"),
        ("--max-connections", "0", "must be a positive integer, not 0"),
        ("--metrics-max-connections", "-1", "must be a positive integer, not -1"),
        ("--status-max-connections", "0", "must be a positive integer, not 0"),
        ("--request-read-timeout", "0", "must be more than 0 seconds, not 0"),
        ("--delegated-auth-review-rate", "0", "must be a positive rate, not 0"),
        ("--delegated-auth-review-rate", "inf", "must be a positive rate, not inf"),
        ("--delegated-auth-review-rate", "fast", "'fast' is not a number"),
    ],
)
def test_a_bad_number_is_one_clear_argparse_error(
    flag: str, value: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        parse(flag, value)
    assert exited.value.code == 2
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert f"argument {flag}" in last and last.endswith(f": {message}")


def test_numbers_at_the_edges_are_accepted() -> None:
    assert parse("--port", "1").port == 1 and parse("--port", "65535").port == 65535
    assert parse("--refresh-interval", "0").refresh_interval == 0.0
    assert parse("--assume-ttl", "0.5").assume_ttl == 0.5


def banner_of(*flags: str) -> str:
    args = parse(*flags)
    return banner(args, listening_from_args(args))


def test_banner_has_the_url_and_a_working_curl_example() -> None:
    text = banner_of("--port", "9000", "--url-prefix", "/sched")
    assert "http://127.0.0.1:9000" in text
    curl = shlex.split(text.split("try: ", 1)[1])
    assert curl[:4] == ["curl", "-sS", "-X", "POST"]
    assert "http://127.0.0.1:9000/sched/filter" in curl
    payload = curl[curl.index("-d") + 1]
    assert '"NodeNames"' in payload and '"Pod"' in payload
    assert '"NODE-1"' in payload  # a placeholder pod: no demo cluster was asked for
    demo = shlex.split(banner_of("--demo").split("try: ", 1)[1])
    assert '"cpu-node-1"' in demo[demo.index("-d") + 1]  # a real pending pod of the demo
    tls = banner_of("--tls-cert", "c", "--tls-key", "k", "--token-file", "/t")
    assert "https://127.0.0.1:8888/filter" in tls and "--cacert" in tls
    assert "Authorization: Bearer" in tls


@contextmanager
def running(server: uvicorn.Server) -> Iterator[None]:
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 10
        while not server.started and time.monotonic() < deadline:
            time.sleep(0.01)
        assert server.started
        yield
    finally:
        server.should_exit = True
        thread.join(10)


def test_build_servers_serves_the_backend_from_the_factory() -> None:
    port = free_port()
    args = parse("--port", str(port), "--url-prefix", "/x")
    seen: list[argparse.Namespace] = []

    def factory(a: argparse.Namespace) -> Built[FakeBackend]:
        seen.append(a)
        return Built(FakeBackend())

    server, _, _ = build_servers(args, listening_from_args(args), factory)
    assert seen == [args] and server.config.app.state.settings.url_prefix == "/x"
    assert server.config.workers == 1 and server.config.access_log is False
    with running(server):
        r = httpx.post(f"http://127.0.0.1:{port}/x/filter", content=b'{"Pod":{},"NodeNames":["n"]}')
        assert r.status_code == 200 and r.json()["NodeNames"] == ["n"]


def scrape(url: str) -> dict[str, float]:
    text = httpx.get(url + "/metrics").text
    return {s.name: s.value for f in text_string_to_metric_families(text) for s in f.samples}


def test_configuration_warnings_show_on_readyz_and_as_a_gauge(tmp_path: Path) -> None:
    conf = tmp_path / "volcano.conf"
    conf.write_text("actions: allocate\ntiers:\n- plugins:\n  - name: proportionn\n")
    port = free_port()
    args = parse("--demo", "--port", str(port), "--conf", str(conf))
    server, _, _ = build_servers(args, listening_from_args(args), backend_from_args)
    url = f"http://127.0.0.1:{port}"
    with running(server):
        ready = httpx.get(url + "/readyz")
        assert ready.status_code == 200  # still ready: Volcano runs on without the plugin
        assert ready.text.startswith("ok; 1 configuration warning(s): ")
        assert f"{conf}: tiers[0].plugins[0]: plugin 'proportionn'" in ready.text
        assert scrape(url)["queue_extender_config_warnings"] == 1


def test_a_clean_configuration_is_plain_ok_and_a_zero_gauge() -> None:
    port = free_port()
    args = parse("--demo", "--port", str(port))
    server, _, _ = build_servers(args, listening_from_args(args), backend_from_args)
    url = f"http://127.0.0.1:{port}"
    with running(server):
        assert httpx.get(url + "/readyz").text == "ok"
        assert scrape(url)["queue_extender_config_warnings"] == 0


def test_assumed_pods_show_as_a_gauge_that_falls_back_when_they_expire() -> None:
    port = free_port()
    args = parse("--demo", "--port", str(port), "--assume-ttl", "0.5")
    server, _, _ = build_servers(args, listening_from_args(args), backend_from_args)
    url = f"http://127.0.0.1:{port}"
    pod = {
        "metadata": {
            "name": "asked",
            "namespace": "default",
            "uid": "u-asked",
            "annotations": {"scheduling.volcano.sh/queue-name": "production"},
        },
        "spec": {
            "schedulerName": "queue-scheduler",
            "containers": [{"name": "c", "resources": {"requests": {"cpu": "100m"}}}],
        },
    }
    with running(server):
        before = scrape(url)
        assert before["queue_extender_assumed_pods"] == 0
        answer = httpx.post(url + "/filter", json={"Pod": pod, "NodeNames": ["cpu-node-1"]})
        assert answer.json()["NodeNames"] == ["cpu-node-1"], answer.text
        assert scrape(url)["queue_extender_assumed_pods"] == 1
        time.sleep(0.6)
        after = scrape(url)
        assert after["queue_extender_assumed_pods"] == 0
        assert after["queue_extender_assumptions_expired_total"] == (
            before["queue_extender_assumptions_expired_total"] + 1
        )
        invented = {**pod, "metadata": {**pod["metadata"], "uid": "not a uid!"}}
        answer = httpx.post(url + "/filter", json={"Pod": invented, "NodeNames": ["cpu-node-1"]})
        assert answer.json()["NodeNames"] == ["cpu-node-1"], answer.text
        last = scrape(url)
        assert last["queue_extender_assumed_pods"] == 0
        assert last["queue_extender_unseen_pods_not_assumed_total"] == 1
        assert last["queue_extender_unseen_assumptions_dropped_total"] == 0


def accounting_sessions(url: str) -> dict[str, float]:
    text = httpx.get(url + "/metrics").text
    return {
        s.labels["way"]: s.value
        for f in text_string_to_metric_families(text)
        for s in f.samples
        if s.name == "queue_extender_accounting_sessions_total"
    }


def test_how_the_accounting_session_was_kept_current_shows_as_a_counter_by_way() -> None:
    port = free_port()
    args = parse("--demo", "--port", str(port))
    server, _, _ = build_servers(args, listening_from_args(args), backend_from_args)
    url = f"http://127.0.0.1:{port}"
    unseen = {
        "metadata": {"name": "unseen", "namespace": "default", "uid": "u-unseen"},
        "spec": {
            "schedulerName": "queue-scheduler",
            "containers": [{"name": "c", "resources": {"requests": {"cpu": "100m"}}}],
        },
    }
    with running(server):
        before = accounting_sessions(url)
        assert set(before) == {"opened", "followed", "one_off", "taken_in"}
        answer = httpx.post(url + "/filter", json={"Pod": unseen, "NodeNames": ["cpu-node-1"]})
        assert answer.json()["NodeNames"] == ["cpu-node-1"], answer.text
        after = accounting_sessions(url)
        # The cache has not shown the pod: its filter takes its job into the kept session.
        assert after["taken_in"] == before["taken_in"] + 1
        assert after["one_off"] == before["one_off"]
        assert after["opened"] >= 1


def test_run_serve_refuses_half_tls(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], restore_root: None
) -> None:
    cert = tmp_path / "c.pem"
    cert.write_text("x")
    args = parse("--tls-cert", str(cert))
    calls: list[argparse.Namespace] = []

    def factory(a: argparse.Namespace) -> Built[FakeBackend]:
        calls.append(a)
        return Built(FakeBackend())

    assert run_serve(args, factory) == 2
    assert calls == []  # the backend is never built for a bad configuration
    assert "queue-extender serving" not in capsys.readouterr().out


@pytest.mark.parametrize(
    ("value", "address"),
    [
        ("0.0.0.0:9090", ("0.0.0.0", 9090)),
        (":9090", ("0.0.0.0", 9090)),
        ("[::1]:9090", ("::1", 9090)),
        ("metrics.local:1", ("metrics.local", 1)),
    ],
)
def test_metrics_bind_address_is_host_and_port(value: str, address: tuple[str, int]) -> None:
    assert parse("--metrics-bind-address", value).metrics_bind_address == address
    assert parse().metrics_bind_address is None  # default: /metrics on the main listener only


@pytest.mark.parametrize("value", ["9090", "0.0.0.0:70000", "0.0.0.0:metrics", "0.0.0.0:"])
def test_a_bad_metrics_bind_address_is_refused(value: str) -> None:
    with pytest.raises(SystemExit):
        parse("--metrics-bind-address", value)


def test_the_metrics_listener_cannot_share_the_main_address(restore_root: None) -> None:
    args = parse("--metrics-bind-address", "127.0.0.1:8888")
    assert run_serve(args, lambda _a: Built(FakeBackend())) == 2


@pytest.mark.parametrize(
    ("flags", "url"),
    [
        ((), "http://127.0.0.1:8888/"),
        (("--port", "9000"), "http://127.0.0.1:9000/"),
        (("--status-address", "0.0.0.0:9100"), "http://127.0.0.1:9100/"),
        (("--tls-cert", "c", "--tls-key", "k"), "https://127.0.0.1:8888/"),
    ],
)
def test_the_banner_names_the_status_page(flags: tuple[str, ...], url: str) -> None:
    lines = banner_of("--demo", *flags).splitlines()
    assert f"status page: {url}" in lines


def test_the_banner_names_the_metrics_listener() -> None:
    text = banner_of("--metrics-bind-address", "0.0.0.0:9090")
    assert "metrics http://127.0.0.1:9090/metrics" in text


def test_the_metrics_listener_serves_metrics_and_probes_but_not_the_verbs() -> None:
    port, metrics_port = free_port(), free_port()
    args = parse("--port", str(port), "--metrics-bind-address", f"127.0.0.1:{metrics_port}")
    server, sides, _ = build_servers(
        args, listening_from_args(args), lambda _a: Built(FakeBackend())
    )
    (metrics,) = sides
    assert metrics is not None
    thread = threading.Thread(target=serve_all, args=(server, [metrics]), daemon=True)
    thread.start()
    main_url, metrics_url = f"http://127.0.0.1:{port}", f"http://127.0.0.1:{metrics_port}"
    try:
        deadline = time.monotonic() + 10
        while not (server.started and metrics.started) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert server.started and metrics.started
        verb = httpx.post(main_url + "/filter", content=b'{"Pod":{},"NodeNames":["n"]}')
        assert verb.status_code == 200
        for path in ("/healthz", "/readyz", "/metrics"):
            assert httpx.get(metrics_url + path).status_code == 200, path
            assert httpx.get(main_url + path).status_code == 200, path
        # One registry behind both: the filter above is counted on the metrics listener.
        assert scrape(metrics_url)["queue_extender_decisions_total"] == 1
        for path in ("/filter", "/prioritize", "/preempt", "/noop"):
            assert httpx.post(metrics_url + path, content=b"{}").status_code == 404, path
        for path in ("/debug/queues", "/openapi.json", "/docs"):
            assert httpx.get(metrics_url + path).status_code == 404, path
    finally:
        server.should_exit = True
        thread.join(10)
    assert not thread.is_alive()  # the metrics listener stopped with the main one
    assert metrics.should_exit


def test_a_metrics_port_in_use_stops_the_main_listener_too() -> None:
    with socket.socket() as taken:
        taken.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy = taken.getsockname()[1]
        args = parse("--port", str(free_port()), "--metrics-bind-address", f"127.0.0.1:{busy}")
        server, sides, _ = build_servers(
            args, listening_from_args(args), lambda _a: Built(FakeBackend())
        )
        (metrics,) = sides
        assert metrics is not None
        codes: list[int] = []
        thread = threading.Thread(
            target=lambda: codes.append(serve_all(server, [metrics])), daemon=True
        )
        thread.start()
        thread.join(30)
    assert not thread.is_alive() and codes and codes[0] != 0


def test_each_listener_gets_its_own_limits_from_the_flags() -> None:
    args = parse(
        "--max-connections",
        "300",
        "--metrics-max-connections",
        "7",
        "--status-max-connections",
        "9",
        "--request-read-timeout",
        "4",
    )
    limits = listener_limits(args)
    assert {name: lim.max_connections for name, lim in limits.items()} == {
        "verbs": 300,
        "metrics": 7,
        "status": 9,
    }
    assert {lim.read_timeout for lim in limits.values()} == {4.0}


def test_noop_is_off_unless_the_flag_asks_for_it() -> None:
    assert settings_from_args(parse()).noop is False
    assert settings_from_args(parse("--noop")).noop is True
