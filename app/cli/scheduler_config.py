"""``queue-extender scheduler-config``: print the KubeSchedulerConfiguration for an engine
conf (``app/schedconfig/render.py``), as a file, as deploy/'s ConfigMap, or as the chart's
values. YAML on stdout, warnings on stderr, one error line and exit 2 for bad input."""

from __future__ import annotations

import argparse
import shlex
import sys
from typing import Any, TextIO

from app.cli.scheduler_config_flags import (
    DEFAULT_EXTENDER_URL,
    add_scheduler_config_flags,
    extender_from_args,
    leader_election_from_args,
)
from app.schedconfig.render import (
    Rendered,
    RenderError,
    dump_yaml,
    render_scheduler_config,
)
from app.version import version
from scheduler_core.conf import ConfigError, default_configuration, load_configuration_file

COMMAND = "scheduler-config"
CONFIG_KEY = "scheduler-config.yaml"
PROJECT = "kube-queue-extender"


def add_scheduler_config_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        COMMAND,
        help="print kube-scheduler's configuration for an engine conf",
        description="Render the KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1) "
        "whose profiles score nodes natively as the conf's nodeorder and binpack do, and "
        "whose extender entry asks only filter and preempt (one call per pod).",
    )
    add_scheduler_config_flags(parser)
    parser.set_defaults(func=run_scheduler_config)


#: (flag, namespace attribute, default) in the order the regenerating command lists them
_FLAGS: tuple[tuple[str, str, Any], ...] = (
    ("--conf", "conf", None),
    ("--extender-url", "extender_url", DEFAULT_EXTENDER_URL),
    ("--scheduler-names", "scheduler_names", ["queue-scheduler"]),
    ("--scoring", "scoring", "native"),
    ("--percentage-of-nodes-to-score", "percentage_of_nodes_to_score", 100),
    ("--extender-weight", "extender_weight", 12),
    ("--http-timeout", "http_timeout", "5s"),
    ("--ignorable", "ignorable", False),
    ("--tls-ca-file", "tls_ca_file", None),
    ("--tls-cert-file", "tls_cert_file", None),
    ("--tls-key-file", "tls_key_file", None),
    ("--tls-server-name", "tls_server_name", None),
    ("--leader-elect", "leader_elect", True),
    ("--leader-elect-resource-name", "leader_elect_resource_name", None),
    ("--leader-elect-resource-namespace", "leader_elect_resource_namespace", None),
    ("--leader-elect-lease-duration", "leader_elect_lease_duration", None),
    ("--leader-elect-renew-deadline", "leader_elect_renew_deadline", None),
    ("--leader-elect-retry-period", "leader_elect_retry_period", None),
    ("--output", "output", "config"),
    ("--configmap-name", "configmap_name", "kube-queue-extender-scheduler-config"),
    ("--namespace", "namespace", "kube-queue-extender"),
)


def command_line(args: argparse.Namespace) -> str:
    """The command that renders ``args`` again: every flag that differs from its default."""
    words = ["queue-extender", COMMAND]
    for flag, attribute, default in _FLAGS:
        value = getattr(args, attribute)
        if value == default:
            continue
        if isinstance(value, bool):
            words.append(f"{flag}={'true' if value else 'false'}")
        elif isinstance(value, list):
            words += [flag, ",".join(value)]
        else:
            words += [flag, str(value)]
    return shlex.join(words)


def render_from_args(args: argparse.Namespace) -> Rendered:
    conf = load_configuration_file(args.conf) if args.conf else default_configuration()
    return render_scheduler_config(
        conf,
        extender_url=args.extender_url,
        scheduler_names=args.scheduler_names,
        scoring=args.scoring,
        leader_election=leader_election_from_args(args),
        extender=extender_from_args(args),
        percentage_of_nodes_to_score=args.percentage_of_nodes_to_score,
    )


def configmap_text(rendered: Rendered, args: argparse.Namespace) -> str:
    """A ConfigMap holding the configuration, headed by the command that regenerates it."""
    metadata = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": args.configmap_name,
            "namespace": args.namespace,
            "labels": {
                "app.kubernetes.io/name": PROJECT,
                "app.kubernetes.io/instance": PROJECT,
                "app.kubernetes.io/version": version(),
                "app.kubernetes.io/component": "scheduler",
            },
        },
    }
    body = "".join(f"    {line}\n" if line else "\n" for line in rendered.yaml.splitlines())
    return (
        "# kube-scheduler's configuration: one profile per scheduler name, scoring as the\n"
        "# engine conf says, and the extender on the pod's loopback.\n"
        "# Generated; do not edit. Regenerate with:\n"
        f"#   {command_line(args)}\n" + dump_yaml(metadata) + f"data:\n  {CONFIG_KEY}: |\n" + body
    )


def helm_values(rendered: Rendered) -> dict[str, Any]:
    """The chart's ``scheduler.scoring`` and ``scheduler.nativeScoring`` for this conf."""
    profile = dict(rendered.document["profiles"][0])
    del profile["schedulerName"]
    return {
        "scheduler": {
            "scoring": "extender" if rendered.prioritize else "native",
            "nativeScoring": profile,
        }
    }


def run_scheduler_config(
    args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None
) -> int:
    """Exit 0 with the YAML on ``out`` and any warning on ``err``; exit 2 with one line on
    ``err`` for bad input (a conf that does not load, a value kube-scheduler refuses)."""
    out = out if out is not None else sys.stdout
    err = err if err is not None else sys.stderr
    if args.output == "helm-values":
        args.scoring = "native"  # the values say which scoring the conf needs
    try:
        rendered = render_from_args(args)
    except (ConfigError, RenderError) as exc:
        print(f"queue-extender {COMMAND}: {exc}", file=err)
        return 2
    for warning in rendered.warnings:
        print(f"warning: {warning}", file=err)
    if args.output == "configmap":
        out.write(configmap_text(rendered, args))
    elif args.output == "helm-values":
        out.write(dump_yaml(helm_values(rendered)))
    else:
        out.write(rendered.yaml)
    return 0
