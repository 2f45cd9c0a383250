"""``queue-extender simulate``: run one Volcano session over a cluster described as YAML."""

from __future__ import annotations

import argparse
import sys
from typing import Any, TextIO

import orjson

from app.cli.tables import fmt_resources, table
from scheduler_core.api.devices import DeviceQuotaNames
from scheduler_core.cache.builder import build_checked_snapshot
from scheduler_core.cache.yaml_source import ClusterFileError, load_cluster_file
from scheduler_core.conf import (
    ConfigError,
    SchedulerConfiguration,
    default_configuration,
    load_configuration_file,
    parse_actions,
)
from scheduler_core.engine import run_session
from scheduler_core.report import session_report


def add_simulate_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "simulate",
        help="run one scheduling session over a cluster described as Kubernetes YAML",
        description="Run one Volcano session (enqueue, allocate, preempt, reclaim as "
        "configured) over the objects in --cluster and print what it decided.",
    )
    parser.add_argument("--cluster", required=True, help="multi-document YAML or a kind: List")
    parser.add_argument("--conf", help="volcano-scheduler.conf (default: the built-in one)")
    parser.add_argument(
        "--actions", help='override the configuration\'s actions, e.g. "enqueue, allocate"'
    )
    parser.add_argument(
        "--output",
        "-o",
        choices=("json", "table"),
        default="json",
        help="the session's decisions as JSON or as a table for people (default json)",
    )
    parser.set_defaults(func=run_simulate)


def load_conf(path: str | None, actions: str | None) -> SchedulerConfiguration:
    conf = load_configuration_file(path) if path else default_configuration()
    if actions is not None:
        conf.actions = parse_actions(actions, "--actions")
    return conf


def run_simulate(
    args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None
) -> int:
    """Exit 0 with the report on ``out``; exit 2 with one line on ``err`` for bad input.
    Streams are looked up at call time so redirected stdout/stderr are honoured."""
    out = out if out is not None else sys.stdout
    err = err if err is not None else sys.stderr
    try:
        conf = load_conf(args.conf, args.actions)
        loaded = load_cluster_file(args.cluster)
    except (ConfigError, ClusterFileError) as exc:
        print(f"error: {exc}", file=err)
        return 2
    if loaded.skipped:
        print(loaded.skipped_summary(), file=err)
    names = DeviceQuotaNames(dict(conf.device_class_mappings))
    snapshot, refusal = build_checked_snapshot(
        loaded.objects, names, conf.network_topology.label_levels
    )
    if refusal is not None:
        print(f"error: {args.cluster}: network topology refused: {refusal.describe()}", file=err)
        return 2
    ssn = run_session(snapshot, conf)
    report = session_report(ssn)
    if args.output == "json":
        out.write(orjson.dumps(report, option=orjson.OPT_INDENT_2).decode() + "\n")
    else:
        out.write(rendertable(report))
    return 0


# --- kubectl-style table ------------------------------------------------------------------


def rendertable(report: dict[str, Any]) -> str:
    sections = []
    queue_rows = [
        [
            q["name"],
            q["parent"] or "<none>",
            q["state"],
            str(q["weight"]),
            fmt_resources(q["deserved"]),
            fmt_resources(q["allocated"]),
            fmt_resources(q["request"]),
            f"{q['share']:.2f}",
            "yes" if q["overused"] else "no",
        ]
        for q in report["queues"]
    ]
    sections.append(
        table(
            [
                "QUEUE",
                "PARENT",
                "STATE",
                "WEIGHT",
                "DESERVED",
                "ALLOCATED",
                "REQUEST",
                "SHARE",
                "OVERUSED",
            ],
            queue_rows,
        )
    )
    job_rows = [
        [
            j["name"],
            j["queue"],
            j["phase"],
            str(j["minAvailable"]),
            str(j["ready"]),
            "yes" if j["starving"] else "no",
        ]
        for j in report["jobs"]
    ]
    sections.append(table(["JOB", "QUEUE", "PHASE", "MIN", "READY", "STARVING"], job_rows))
    for title, key in (("ALLOCATED", "allocated"), ("PIPELINED", "pipelined")):
        rows = [[r["pod"], r["node"]] for r in report[key]]
        sections.append(table([f"{title} POD", "NODE"], rows) if rows else f"{title}: none\n")
    evict_rows = [
        [e["pod"], e["node"], e["action"], e["preemptor"] or "<none>"] for e in report["evicted"]
    ]
    sections.append(
        table(["EVICTED POD", "NODE", "ACTION", "PREEMPTOR"], evict_rows)
        if evict_rows
        else "EVICTED: none\n"
    )
    return "\n".join(sections)
