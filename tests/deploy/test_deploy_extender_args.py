"""The extender's container arguments, parsed by the real `queue-extender serve` parser."""

from __future__ import annotations

import argparse

from app.cli.serve_flags import add_serve_parser

from .deploy_manifests import (
    SCHEDULER_NAME,
    Manifest,
    containers,
    pod_spec,
    rendered_documents,
    scheduler_configuration,
)


def _parse(args: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="queue-extender", exit_on_error=False)
    add_serve_parser(parser.add_subparsers(dest="command", required=True))
    return parser.parse_args(args)


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
    assert args.on_error == "fail"
    assert args.strict_conf is True  # a misspelt plugin stops the pod, not fair share
    assert args.conf_reload_interval > 0  # an edited ConfigMap is followed
    # Never the token: kube-scheduler cannot send it (deploy/README.md).
    assert args.token_file is None
    assert args.metrics_auth is False


def test_an_internal_error_never_places_a_pod_the_queue_rules_would_refuse(
    documents: list[Manifest],
) -> None:
    """Fail-closed as a pair: the extender answers filter's Error on an internal error, and
    kube-scheduler, with the extender not ignorable, fails the attempt and retries the pod."""
    args = _parse(containers(documents)["queue-extender"]["args"])
    (extender,) = scheduler_configuration(documents)["extenders"]
    assert args.on_error == "fail"
    assert extender["ignorable"] is False
    assert extender["filterVerb"] == args.filter_verb


def test_verbs_stay_on_loopback_and_metrics_get_their_own_listener(
    documents: list[Manifest],
) -> None:
    container = containers(documents)["queue-extender"]
    args = _parse(container["args"])
    ports = {p["name"]: p["containerPort"] for p in container.get("ports", [])}
    if args.metrics_bind_address is None:
        assert "metrics" not in ports
    else:
        host, port = args.metrics_bind_address
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


def test_the_chart_can_turn_strict_conf_off() -> None:
    documents = rendered_documents({"extender": {"strictConf": False}})
    args = _parse(containers(documents)["queue-extender"]["args"])
    assert args.strict_conf is False
