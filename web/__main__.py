"""`python -m web` starts the app with uvicorn on the configured host and port."""

from __future__ import annotations

import uvicorn

from web.app import create_app
from web.settings import get_settings


def main() -> None:
    settings = get_settings()
    uvicorn.run(create_app(settings), host=settings.host, port=settings.port)


if __name__ == "__main__":
    main()
