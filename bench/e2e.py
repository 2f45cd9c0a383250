"""``python -m bench.e2e [--quick] [--rounds N] [--scales small,large]``: see bench/e2e_bench.py."""

from __future__ import annotations

import sys

from bench.e2e_bench import main

if __name__ == "__main__":
    sys.exit(main())
