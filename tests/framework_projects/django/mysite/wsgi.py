"""WSGI entry point, plus a header naming the worker process that answered
(test scaffolding, not in the guide)."""

import os
from collections.abc import Callable, Iterable
from typing import Any

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mysite.settings")
django_application = get_wsgi_application()


def application(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
    def start(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
        return start_response(status, [*headers, ("X-Worker", str(os.getpid()))], exc_info)

    return django_application(environ, start)  # type: ignore[no-any-return]
