"""The flags of ``queue-extender scheduler-config`` and the renderer's options they make.

The leader-election flags carry kube-scheduler's own names (``--leader-elect``,
``--leader-elect-resource-name``, ...) so that an operator reads them as the
``leaderElection`` fields they fill; durations are Go durations (``15s``), as kube-scheduler
writes them."""

from __future__ import annotations

import argparse
from typing import Any

from app.cli.flag_types import checked, integer
from app.schedconfig.render import SCORINGS, ExtenderOptions, LeaderElectionOptions

DEFAULT_EXTENDER_URL = "http://127.0.0.1:8888/"
OUTPUTS = ("config", "configmap", "helm-values")


def _names(value: str) -> list[str]:
    names = [name.strip() for name in value.split(",")]
    if not value.strip() or any(not name for name in names):
        raise argparse.ArgumentTypeError(f"expected comma-separated scheduler names, not {value!r}")
    return names


def _boolean(value: str) -> bool:
    lowered = value.strip().lower()
    if lowered in ("true", "1", "yes", "on"):
        return True
    if lowered in ("false", "0", "no", "off"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, not {value!r}")


_positive = checked(integer, lambda n: n > 0, "must be 1 or more, not {value}")


def add_scheduler_config_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--conf", help="the engine's volcano-scheduler.conf (default: the built-in one)")
    p.add_argument(
        "--extender-url",
        default=DEFAULT_EXTENDER_URL,
        help="the extender's urlPrefix as kube-scheduler reaches it; https turns enableHTTPS "
        f"on (default {DEFAULT_EXTENDER_URL}, the sidecar's loopback)",
    )
    p.add_argument(
        "--scheduler-names",
        type=_names,
        default=["queue-scheduler"],
        help="comma-separated profile names, one profile each, the same as the extender's "
        "--scheduler-names (default queue-scheduler)",
    )
    p.add_argument(
        "--scoring",
        choices=SCORINGS,
        default="native",
        help="native: kube-scheduler's score plugins express nodeorder and binpack, one call "
        "per pod (filter); extender: the extender's prioritize verb scores exactly as Volcano "
        "(a second call per pod). A conf the plugins cannot express keeps prioritize with a "
        "warning (default native)",
    )
    p.add_argument(
        "--percentage-of-nodes-to-score",
        type=int,
        default=100,
        help="kube-scheduler's percentageOfNodesToScore (default 100: the extender must see "
        "every feasible node to keep queues fair)",
    )
    ext = p.add_argument_group("extender entry")
    ext.add_argument(
        "--extender-weight",
        type=_positive,
        default=12,
        help="the extender's weight, written only when prioritizeVerb is (default 12)",
    )
    ext.add_argument("--http-timeout", default="5s", help="the extender's httpTimeout (default 5s)")
    ext.add_argument(
        "--ignorable",
        type=_boolean,
        nargs="?",
        const=True,
        default=False,
        metavar="BOOL",
        help="kube-scheduler skips the extender when it errs (default false: the attempt "
        "fails instead of placing the pod without the queue rules)",
    )
    ext.add_argument("--tls-ca-file", help="tlsConfig.caFile (an https --extender-url)")
    ext.add_argument("--tls-cert-file", help="tlsConfig.certFile (mutual TLS)")
    ext.add_argument("--tls-key-file", help="tlsConfig.keyFile (mutual TLS)")
    ext.add_argument("--tls-server-name", help="tlsConfig.serverName")
    le = p.add_argument_group("leader election (kube-scheduler's leaderElection)")
    le.add_argument(
        "--leader-elect",
        type=_boolean,
        nargs="?",
        const=True,
        default=True,
        metavar="BOOL",
        help="elect one active kube-scheduler (default true; --leader-elect=false for one replica)",
    )
    le.add_argument(
        "--leader-elect-resource-name",
        help="the Lease's name (default: the first scheduler name)",
    )
    le.add_argument(
        "--leader-elect-resource-namespace",
        help="the Lease's namespace (default: kube-scheduler's, kube-system)",
    )
    le.add_argument("--leader-elect-lease-duration", help="e.g. 15s (default kube-scheduler's)")
    le.add_argument("--leader-elect-renew-deadline", help="e.g. 10s (default kube-scheduler's)")
    le.add_argument("--leader-elect-retry-period", help="e.g. 2s (default kube-scheduler's)")
    out = p.add_argument_group("output")
    out.add_argument(
        "--output",
        "-o",
        choices=OUTPUTS,
        default="config",
        help="config: the KubeSchedulerConfiguration; configmap: a ConfigMap holding it as "
        "scheduler-config.yaml (--configmap-name, --namespace), with the command that made "
        "it; helm-values: the chart's scheduler.scoring and scheduler.nativeScoring values "
        "for --conf (default config)",
    )
    out.add_argument(
        "--configmap-name",
        default="kube-queue-extender-scheduler-config",
        help="the ConfigMap's name (--output configmap)",
    )
    out.add_argument(
        "--namespace",
        default="kube-queue-extender",
        help="the ConfigMap's namespace (--output configmap)",
    )


def leader_election_from_args(args: argparse.Namespace) -> LeaderElectionOptions:
    return LeaderElectionOptions(
        leader_elect=args.leader_elect,
        resource_name=args.leader_elect_resource_name,
        resource_namespace=args.leader_elect_resource_namespace,
        lease_duration=args.leader_elect_lease_duration,
        renew_deadline=args.leader_elect_renew_deadline,
        retry_period=args.leader_elect_retry_period,
    )


def extender_from_args(args: argparse.Namespace) -> ExtenderOptions:
    tls: dict[str, Any] = {
        key: value
        for key, value in (
            ("caFile", args.tls_ca_file),
            ("certFile", args.tls_cert_file),
            ("keyFile", args.tls_key_file),
            ("serverName", args.tls_server_name),
        )
        if value
    }
    return ExtenderOptions(
        weight=args.extender_weight,
        http_timeout=args.http_timeout,
        ignorable=args.ignorable,
        tls_config=tls or None,
    )
