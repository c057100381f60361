"""Variables in config values: ``${VAR}``, ``${VAR:-default}``, ``${env:VAR}``.

The forms Claude Code (``${VAR}``, ``${VAR:-default}``), Cursor and VS Code
(``${env:VAR}``) write, plus two of VS Code's predefined variables:
``${userHome}`` and ``${workspaceFolder}`` (the directory ``mcp-sync`` runs
in). A bare ``$VAR`` is text, as it is for those tools.

An unset or empty variable without a default is an error naming it, never
an empty string handed to a server. ``${VAR:-default}`` takes the default
when the variable is unset or empty (as a shell does); the default is
literal text up to the first ``}``. VS Code's ``${input:...}`` prompts a
person for a value, which a command cannot do: it is refused with a
message saying so.

:func:`expand_text` is what the config loader uses: a value that took
anything from the environment comes back as a :class:`~._secret.Secret`,
which shows the references as written wherever it is rendered, and whose
pieces from the environment are masked in a server's output. ``${userHome}``,
``${workspaceFolder}`` and a default are not the user's secrets: they are
shown expanded.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator, Mapping

from ..protocol.errors import InvalidInput
from ..protocol.secret import Secret

__all__ = ["VariableError", "expand", "expand_text"]

_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
# One reference: "${" then anything up to the first "}" (checked below), or
# a "${" that is never closed. Linear: no nested quantifiers.
_REFERENCE = re.compile(r"\$\{([^}]*)(\})?")
_ENV_FORM = re.compile(rf"(?:env:)?({_NAME})(?::-(.*))?\Z", re.DOTALL)
_PREDEFINED: dict[str, Callable[[], str]] = {
    "userHome": lambda: os.path.expanduser("~"),
    "workspaceFolder": os.getcwd,
}


class VariableError(InvalidInput):
    """A reference that cannot be expanded; the message names it, never a value.
    (Reported to a caller as the :class:`ConfigError` of its entry and field.)"""


def expand(
    text: str,
    environ: Mapping[str, str] | None = None,
    found: set[str] | None = None,
) -> str:
    """``text`` with every reference replaced.

    ``environ`` defaults to ``os.environ``. Each value taken from it is added
    to ``found`` (defaults are not: they are written in the file).
    """
    out: list[str] = []
    for _, value, from_env in _pieces(text, environ):
        out.append(value)
        if from_env and found is not None:
            found.add(value)
    return "".join(out)


def expand_text(text: str, environ: Mapping[str, str] | None = None) -> str | Secret:
    """``text`` expanded; a :class:`Secret` when any of it came from the
    environment (shown with those references as written), else a ``str``."""
    shown: list[str] = []
    values: list[str] = []
    found: list[str] = []
    for written, value, from_env in _pieces(text, environ):
        values.append(value)
        shown.append(written if from_env else value)
        if from_env:
            found.append(value)
    if not found:
        return "".join(values)
    return Secret("".join(shown), "".join(values), found)


def _pieces(
    text: str, environ: Mapping[str, str] | None
) -> Iterator[tuple[str, str, bool]]:
    """``text`` in pieces: ``(as written, value, from the environment)``."""
    if "${" not in text:
        yield text, text, False
        return
    env = os.environ if environ is None else environ
    last = 0
    for match in _REFERENCE.finditer(text):
        literal = text[last : match.start()]
        yield literal, literal, False
        last = match.end()
        body = match.group(1)
        if match.group(2) is None:
            raise VariableError(f"has an unterminated ${{{_shown(body)} (no closing }})")
        value, from_env = _value(body, env)
        yield match.group(0), value, from_env
    tail = text[last:]
    yield tail, tail, False


def _value(body: str, env: Mapping[str, str]) -> tuple[str, bool]:
    if body.startswith("input:"):
        raise VariableError(
            f"uses ${{{_shown(body)}}}, a VS Code prompt for a value; mcp-sync cannot ask "
            "for one: export the value in an environment variable and write ${env:NAME}"
        )
    if body in _PREDEFINED:
        return _PREDEFINED[body](), False
    match = _ENV_FORM.match(body)
    if match is None:
        raise VariableError(
            f"has ${{{_shown(body)}}}, which is not a variable mcp-sync expands "
            "(${VAR}, ${VAR:-default}, ${env:VAR}, ${userHome}, ${workspaceFolder})"
        )
    name, default = match.group(1), match.group(2)
    value = env.get(name, "")
    if value:
        return value, True
    if default is not None:
        return default, False
    raise VariableError(
        f"uses the variable {name}, which is not set (or is empty); "
        f"export it, or write ${{{name}:-default}}"
    )


def _shown(body: str) -> str:
    # A reference's text is from the file, not a value; still, keep it short
    # and free of control characters.
    text = body if len(body) <= 60 else body[:57] + "..."
    return ascii(text)[1:-1]
