"""``kubectl-queue``: the query commands as a kubectl plugin (``kubectl queue explain pod/x
-n ns``), reaching the extender through the kubeconfig's API server unless ``--server`` or
``--cluster`` says otherwise."""

from __future__ import annotations

import argparse
import sys

from app.cli.query import add_query_parsers


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kubectl queue",
        description="Why is my job pending, what would this evict: queue-extender's read-only "
        "API through the API server's service proxy (or --server / --cluster).",
    )
    subparsers = parser.add_subparsers(dest="command", required=True)
    add_query_parsers(subparsers, proxy_default=True)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    result: int = args.func(args)
    return result


if __name__ == "__main__":
    sys.exit(main())
