"""The ``queue-extender`` command: ``serve`` (the extender), ``simulate`` (offline), the
read-only queries (``queues``, ``explain``, ``whatif``) and ``scheduler-config`` (kube-scheduler's
configuration for an engine conf)."""

from __future__ import annotations

import argparse
import sys

from app.cli.query import add_query_parsers
from app.cli.scheduler_config import add_scheduler_config_parser
from app.cli.serve import backend_from_args, run_serve
from app.cli.serve_flags import add_serve_parser
from app.cli.simulate import add_simulate_parser
from app.version import version


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="queue-extender",
        description="Volcano queue fair-share, preemption and reclaim for kube-scheduler.",
    )
    parser.add_argument("--version", action="version", version=f"queue-extender {version()}")
    subparsers = parser.add_subparsers(dest="command", required=True)
    add_serve_parser(subparsers).set_defaults(func=serve)
    add_simulate_parser(subparsers)
    add_query_parsers(subparsers)
    add_scheduler_config_parser(subparsers)
    return parser


def serve(args: argparse.Namespace) -> int:
    return run_serve(args, backend_from_args)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    result: int = args.func(args)
    return result


if __name__ == "__main__":
    sys.exit(main())
