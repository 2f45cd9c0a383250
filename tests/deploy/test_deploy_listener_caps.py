"""The shipped extender runs with its listeners bounded: a connection cap on the verbs'
listener and on the metrics one (counted apart), a body cap and a request-read deadline, each
a value `serve` accepts."""

from __future__ import annotations

import argparse

from app.cli.serve_flags import add_serve_parser, listener_limits
from tests.deploy.deploy_manifests import Manifest, containers

CAPS = ("--max-connections", "--max-body-bytes", "--request-read-timeout")


def _serve_args(documents: list[Manifest]) -> list[str]:
    args: list[str] = containers(documents)["queue-extender"]["args"]
    assert args[0] == "serve"
    return args[1:]


def test_the_extender_runs_with_every_listener_cap(documents: list[Manifest]) -> None:
    args = _serve_args(documents)
    for flag in CAPS:
        assert flag in args, flag
    if "--metrics-bind-address" in args:
        assert "--metrics-max-connections" in args


def test_the_shipped_caps_are_values_serve_accepts(documents: list[Manifest]) -> None:
    parser = argparse.ArgumentParser()
    add_serve_parser(parser.add_subparsers())
    args = _serve_args(documents)
    flags = (*CAPS, "--metrics-max-connections")
    wanted = [part for i, a in enumerate(args) if a in flags for part in (a, args[i + 1])]
    parsed = parser.parse_args(["serve", *wanted])
    limits = listener_limits(parsed)
    assert limits["verbs"].max_connections >= 64
    assert 0 < limits["verbs"].read_timeout <= 30
    assert parsed.max_body_bytes <= 16 * 1024 * 1024
