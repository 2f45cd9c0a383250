"""--status-address: the page and the read-only API on their own listener, verbs absent,
the bearer token honoured."""

from __future__ import annotations

import argparse
import threading
import time
from pathlib import Path

import httpx
import pytest

from app.cli.flag_types import host_port
from app.cli.main import build_parser
from app.cli.serve import backend_from_args, build_servers
from app.cli.serve_flags import listening_from_args
from app.serving.listeners import serve_all
from tests.ports import free_port


def test_both_listeners_serve_and_the_status_one_has_no_verbs(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("s3cret\n", encoding="utf-8")
    main_port, status_port = free_port(), free_port()
    args = build_parser().parse_args(
        [
            "serve",
            "--demo",
            "--port",
            str(main_port),
            "--status-address",
            f"127.0.0.1:{status_port}",
            "--token-file",
            str(token),
        ]
    )
    server, sides, _ = build_servers(args, listening_from_args(args), backend_from_args)
    (status,) = sides
    thread = threading.Thread(target=serve_all, args=(server, sides), daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 15
        while not (server.started and status.started) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert server.started and status.started
        side = f"http://127.0.0.1:{status_port}"
        auth = {"Authorization": "Bearer s3cret"}
        assert httpx.get(side + "/", timeout=10).status_code == 401
        page = httpx.get(side + "/", headers=auth, timeout=10)
        assert page.status_code == 200 and "data-queue='production'" in page.text
        assert httpx.get(side + "/api/v1/queues", headers=auth, timeout=10).status_code == 200
        for hidden in ("/filter", "/metrics", "/debug/queues"):
            answer = httpx.request(
                "POST" if hidden == "/filter" else "GET", side + hidden, headers=auth, timeout=10
            )
            assert answer.status_code in (404, 405), hidden
        main = f"http://127.0.0.1:{main_port}"
        assert httpx.get(main + "/api/v1/queues", headers=auth, timeout=10).status_code == 200
    finally:
        server.should_exit = True
        thread.join(15)
    assert not thread.is_alive()


@pytest.mark.parametrize("value", ["8080", "host:", "host:99999", "host:x", "host:0"])
def test_bad_status_addresses_are_refused(value: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError):
        host_port(value)


def test_ipv6_and_names_are_accepted() -> None:
    assert host_port("[::1]:9000") == ("::1", 9000)
    assert host_port("0.0.0.0:8080") == ("0.0.0.0", 8080)


@pytest.mark.parametrize("flag", ["--status-address", "--metrics-bind-address"])
def test_an_empty_host_is_every_interface_for_every_listener(flag: str) -> None:
    """One reading of HOST:PORT for both side listeners: ``:PORT`` binds every interface, as
    Go's net.Listen and controller-runtime read it, never a refusal on one flag and a bind
    on the other."""
    args = build_parser().parse_args(["serve", "--demo", flag, ":9100"])
    assert vars(args)[flag[2:].replace("-", "_")] == ("0.0.0.0", 9100)
