"""``queue-extender queues | explain | whatif``: the read-only API for people, kubectl-style.

Tables by default, ``-o json|yaml`` for the API's own documents. Answers come from a running
server (``--server``), the API server's service proxy (``--kubeconfig``/``--service``, what
the ``kubectl queue`` plugin does by default) or an engine over a cluster file
(``--cluster``, offline, the engine ``simulate`` runs).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import Any, TextIO

import yaml

from app.cli.query_client import (
    Client,
    Doc,
    HttpClient,
    KubeProxyClient,
    OfflineClient,
    QueryError,
    api_path,
)
from app.cli.tables import fmt_resources, table

#: Where ``kubectl queue`` looks without ``--server``: the Service the manifests install.
DEFAULT_SERVICE = "kube-queue-extender/kube-queue-extender-status:8890"

_Subparsers = Any  # argparse's _SubParsersAction is private; typed loosely on purpose.


def add_source_options(parser: argparse.ArgumentParser, *, proxy_default: bool) -> None:
    src = parser.add_argument_group("where the answers come from")
    src.add_argument("--server", metavar="URL", help="the extender's URL, e.g. https://host:8888")
    src.add_argument("--token-file", metavar="FILE", help="bearer token for --server")
    src.add_argument("--cacert", metavar="FILE", help="CA bundle for an https --server")
    src.add_argument("--cert", metavar="FILE", help="client certificate (mTLS)")
    src.add_argument("--key", metavar="FILE", help="client certificate's key")
    src.add_argument(
        "--insecure-skip-tls-verify", action="store_true", help="do not verify the server"
    )
    src.add_argument("--cluster", metavar="FILE", help="offline: a cluster described as YAML")
    src.add_argument("--conf", metavar="FILE", help="offline: volcano-scheduler.conf")
    src.add_argument(
        "--kubeconfig", metavar="FILE", help="reach the extender through this API server"
    )
    src.add_argument("--context", help="kubeconfig context")
    src.add_argument(
        "--service",
        default=DEFAULT_SERVICE if proxy_default else None,
        metavar="NS/NAME:PORT",
        help=f"the extender's Service for the API server proxy (default {DEFAULT_SERVICE})",
    )
    parser.add_argument(
        "-o",
        "--output",
        choices=("table", "json", "yaml"),
        default="table",
        help="output format (default table)",
    )


def add_query_parsers(subparsers: _Subparsers, *, proxy_default: bool = False) -> None:
    """``queues``, ``explain`` and ``whatif``, each with the source options."""
    q = subparsers.add_parser("queues", help="queues with their fair share; one queue in detail")
    q.add_argument("name", nargs="?", help="one queue: its derivation and pending jobs")
    add_source_options(q, proxy_default=proxy_default)
    q.set_defaults(func=run_queues)

    e = subparsers.add_parser("explain", help="why is this pod or PodGroup pending")
    e.add_argument("target", metavar="pod/NAME|podgroup/NAME")
    e.add_argument(
        "-n", "--namespace", default="default", help="namespace of the pod (default default)"
    )
    add_source_options(e, proxy_default=proxy_default)
    e.set_defaults(func=run_explain)

    w = subparsers.add_parser("whatif", help="what would be placed and evicted if submitted")
    w.add_argument("-f", "--filename", action="append", default=[], help="YAML of objects")
    w.add_argument(
        "--remove",
        action="append",
        default=[],
        metavar="NS/POD",
        help="also remove this pod in the what-if (repeatable)",
    )
    w.add_argument(
        "--scope",
        choices=("submitted", "all"),
        default="submitted",
        help="submitted (default): schedule only the added jobs; all: the whole session, "
        "every pending job of the cluster included (what simulate decides)",
    )
    add_source_options(w, proxy_default=proxy_default)
    w.set_defaults(func=run_whatif)


def client_from_args(args: argparse.Namespace) -> Client:
    if args.cluster:
        return OfflineClient(args.cluster, args.conf)
    if args.server:
        token = None
        if args.token_file:
            try:
                with open(args.token_file, encoding="utf-8") as handle:
                    token = handle.read().strip()
            except OSError as exc:
                raise QueryError(f"cannot read --token-file: {exc}") from None
        return HttpClient(
            args.server,
            token=token,
            cacert=args.cacert,
            cert=args.cert,
            key=args.key,
            insecure=args.insecure_skip_tls_verify,
        )
    if args.service or args.kubeconfig:
        return KubeProxyClient(args.service or DEFAULT_SERVICE, args.kubeconfig, args.context)
    raise QueryError("give --server URL, --cluster FILE or --kubeconfig (with --service)")


def _run(
    args: argparse.Namespace,
    ask: Callable[[Client], Doc],
    render: Callable[[Doc], str],
    out: TextIO | None,
    err: TextIO | None,
) -> int:
    out = out if out is not None else sys.stdout
    err = err if err is not None else sys.stderr
    try:
        client = client_from_args(args)
        try:
            doc = ask(client)
        finally:
            client.close()
    except QueryError as exc:
        print(f"error: {exc}", file=err)
        return 1
    if args.output == "json":
        out.write(json.dumps(doc, indent=2) + "\n")
    elif args.output == "yaml":
        out.write(yaml.safe_dump(doc, sort_keys=False))
    else:
        out.write(render(doc))
    return 0


# --- queues ----------------------------------------------------------------------------------


def run_queues(
    args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None
) -> int:
    if args.name:

        def ask(client: Client) -> Doc:
            queue = client.get(api_path("queues", args.name))
            queue["pending"] = client.get(api_path("queues", args.name, "pending"))
            return queue

        return _run(args, ask, render_queue, out, err)
    return _run(args, lambda c: c.get(api_path("queues")), render_queues, out, err)


def render_queues(doc: Doc) -> str:
    rows = [
        [
            q["name"],
            q["parent"] or "<none>",
            q["state"],
            str(q["weight"]),
            fmt_resources(q["allocated"]),
            fmt_resources(q["deserved"]),
            fmt_resources(q["capability"]),
            f"{q['share']:.2f}",
            "yes" if q["overused"] else "no",
            str(q["pendingJobs"]),
        ]
        for q in doc["queues"]
    ]
    headers = ["QUEUE", "PARENT", "STATE", "WEIGHT", "ALLOCATED", "DESERVED", "CAPABILITY"]
    headers += ["SHARE", "OVERUSED", "PENDING"]
    if any(q.get("history") for q in doc["queues"]):
        # With the usage history plugin on: what past usage did to each deserved share.
        headers += ["USAGE SHARE", "WEIGHTED DESERVED"]
        for row, q in zip(rows, doc["queues"], strict=True):
            row.extend(_history_cells(q.get("history")))
    return table(headers, rows)


def _history_cells(history: Doc | None) -> list[str]:
    if not history or not history.get("adjusted"):
        return ["-", "(same)" if history else "-"]
    return [
        f"{history['usageShare']:.2f} (weight x{history['factor']:.3g})",
        fmt_resources(history["weightedDeserved"]),
    ]


def _history_facts(history: Doc | None) -> list[tuple[str, str]]:
    if not history:
        return []
    usage = ", ".join(f"{k} {v:.4g}" for k, v in history["usage"].items() if v is not None)
    facts = [(f"Usage (amount-hours, half-life {history['halfLife']})", usage or "none")]
    if history.get("adjusted"):
        facts.append(
            (
                "Usage / weight share",
                f"{history['usageShare']:.3f} / {history['weightShare']:.3f} "
                f"(weight x{history['factor']:.3g})",
            )
        )
        facts.append(("Weighted deserved", fmt_resources(history["weightedDeserved"])))
    else:
        facts.append(("Weighted deserved", "same as deserved (nothing contended to adjust)"))
    return facts


def render_queue(doc: Doc) -> str:
    facts = [
        ("Queue", doc["name"]),
        ("State", doc["state"] + ("  (overused)" if doc["overused"] else "")),
        ("Weight", str(doc["weight"])),
        ("Guarantee", fmt_resources(doc["guarantee"])),
        ("Capability", fmt_resources(doc["capability"])),
        ("Real capability", fmt_resources(doc["realCapability"])),
        ("Request", fmt_resources(doc["request"])),
        ("Allocated", fmt_resources(doc["allocated"])),
        ("Assumed", f"{fmt_resources(doc['assumed'])} ({doc['assumedPods']} pods)"),
        ("Deserved", fmt_resources(doc["deserved"])),
        ("Share", f"{doc['share']:.3f}"),
        *_history_facts(doc.get("history")),
    ]
    width = max(len(k) for k, _ in facts) + 1
    text = "".join(f"{k + ':':<{width}} {v}\n" for k, v in facts)
    derivation = doc.get("derivation") or {}
    text += f"\nDeserved derivation ({derivation.get('plugin') or 'none'}): "
    text += f"{derivation.get('summary', '')}\n"
    rounds = [
        [
            r["label"],
            fmt_resources(r["remaining"]) if r["remaining"] is not None else "-",
            f"{r['weight']}/{r['totalWeight']}" if r["totalWeight"] is not None else "-",
            fmt_resources(r["offered"]) if r["offered"] is not None else "-",
            fmt_resources(r["deserved"]),
            "; ".join(f"{k}: {','.join(v)}" for k, v in r["clamped"].items()) or "-",
            r["met"] or "-",
        ]
        for r in derivation.get("rounds", [])
    ]
    if rounds:
        headers = ["STEP", "REMAINING", "WEIGHT", "OFFERED", "DESERVED", "CLAMPED", "MET"]
        text += table(headers, rounds)
    pending = doc.get("pending")
    if pending is not None:
        text += f"\nPending jobs ({pending['total']}), in serving order:\n"
        text += render_pending(pending) if pending["jobs"] else "none\n"
    return text


def render_pending(doc: Doc) -> str:
    # The DOMAIN column only where some pending gang asks for a network topology.
    domains = any(j.get("topology") for j in doc["jobs"])
    rows = [
        [
            str(j["position"]),
            j["job"] + (" (native)" if j.get("source") == "native" else ""),
            str(j["priority"]),
            f"{j['ready']}/{j['minAvailable']}",
            str(j["pending"]),
            *([j.get("topology") or "-"] if domains else []),
            j["reason"],
        ]
        for j in doc["jobs"]
    ]
    head = ["#", "JOB", "PRIORITY", "READY/MIN", "PENDING"]
    return table([*head, *(["DOMAIN"] if domains else []), "WHY IT WAITS"], rows)


# --- explain ---------------------------------------------------------------------------------


def run_explain(
    args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None
) -> int:
    kind, _, name = args.target.partition("/")
    kinds = {"pod": "pods", "pods": "pods", "po": "pods", "podgroup": "podgroups"}
    kinds |= {"podgroups": "podgroups", "pg": "podgroups"}
    if kind.lower() not in kinds or not name:
        print(f"error: expected pod/NAME or podgroup/NAME, not {args.target!r}", file=err)
        return 2
    path = api_path(kinds[kind.lower()], args.namespace, name, "explain")
    return _run(args, lambda c: c.get(path), render_explanation, out, err)


def render_explanation(doc: Doc) -> str:
    head = [(doc["kind"], doc["name"])]
    if doc.get("source") == "native":
        # (a Volcano PodGroup or a lone pod's group of one is the default, not marked)
        head.append(("Source", "Kubernetes PodGroup (scheduling.k8s.io)"))
    head += [
        ("Queue", doc["queue"] or "<none>"),
        ("Filter", doc["filter"] + (f" ({doc['code']})" if doc["code"] else "")),
    ]
    if doc["reason"]:
        head.append(("Reason", doc["reason"]))
    head.append(("Summary", doc["summary"]))
    width = max(len(k) for k, _ in head) + 1
    text = "".join(f"{k + ':':<{width}} {v}\n" for k, v in head) + "\n"
    rows = [[s["name"], s["verdict"].upper(), s["rule"], s["detail"]] for s in doc["steps"]]
    text += table(["STEP", "VERDICT", "RULE", "DETAIL"], rows)
    if doc["victims"]:
        text += "\n" + table(
            ["NODE", "MODE", "VICTIMS"],
            [[v["node"], v["mode"], ", ".join(v["victims"])] for v in doc["victims"]],
        )
    return text


# --- whatif ----------------------------------------------------------------------------------


def run_whatif(
    args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None
) -> int:
    err_stream = err if err is not None else sys.stderr
    objects: list[Doc] = []
    for name in args.filename:
        try:
            with open(name, encoding="utf-8") as handle:
                documents = list(yaml.safe_load_all(handle))
        except (OSError, yaml.YAMLError) as exc:
            print(f"error: cannot read {name}: {' '.join(str(exc).split())}", file=err_stream)
            return 2
        for document in documents:
            if isinstance(document, dict) and document.get("kind") == "List":
                objects.extend(item for item in document.get("items") or [])
            elif isinstance(document, dict):
                objects.append(document)
    body = {"add": objects, "remove": list(args.remove), "scope": args.scope}
    return _run(args, lambda c: c.post(api_path("whatif"), body), render_whatif, out, err)


def render_whatif(doc: Doc) -> str:
    placed = [
        [
            p["pod"],
            p["node"],
            "pipelined" if p["pipelined"] else "bound",
            "yes" if p["added"] else "",
        ]
        for p in doc["placed"]
    ]
    text = table(["POD", "NODE", "AS", "ADDED"], placed) if placed else "PLACED: none\n"
    if doc["unplaced"]:
        text += "\nNOT PLACED: " + ", ".join(doc["unplaced"]) + "\n"
    evicted = [[e["pod"], e["node"], e["action"], e["reason"]] for e in doc["evicted"]]
    text += "\n" + (
        table(["EVICTED POD", "NODE", "ACTION", "WHY"], evicted) if evicted else "EVICTED: none\n"
    )
    rows = []
    for q in doc["queues"]:
        before, after = q["before"] or {}, q["after"] or {}
        rows.append(
            [
                q["name"],
                f"{fmt_resources(before.get('deserved'))} -> "
                f"{fmt_resources(after.get('deserved'))}",
                f"{fmt_resources(before.get('allocated'))} -> "
                f"{fmt_resources(after.get('allocated'))}",
                f"{before.get('share', 0):.2f} -> {after.get('share', 0):.2f}",
            ]
        )
    text += "\n" + table(["QUEUE", "DESERVED", "ALLOCATED", "SHARE"], rows)
    domains = [
        [d["job"], d["request"], d["domain"] or "-", d["sentence"]]
        for d in doc.get("domains") or []
    ]
    if domains:
        text += "\n" + table(["GANG", "NETWORK TOPOLOGY", "DOMAIN", "WHY"], domains)
    return text
