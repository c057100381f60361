"""gunicorn's entry point in the Flask test: the guide's app.py, plus a header
naming the worker process that answered (test scaffolding, not in the guide)."""

import os
from collections.abc import Callable, Iterable
from typing import Any

from app import app as flask_app


def application(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
    def start(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
        return start_response(status, [*headers, ("X-Worker", str(os.getpid()))], exc_info)

    return flask_app(environ, start)  # type: ignore[no-any-return]
