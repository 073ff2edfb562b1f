"""`python -m web` (what `make serve` runs) starts the app with uvicorn on the configured host and port, in as many
worker processes as the `workers` setting says (web/serving.py)."""

from __future__ import annotations

import sys

from engine.errors import UneraseError
from web.serving import serve
from web.settings import get_settings


def main() -> int:
    try:
        serve(get_settings())
    except UneraseError as exc:
        print(f"unerase: {exc.message}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
