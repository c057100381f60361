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
message saying so. Every value taken from the environment is recorded, so
the caller can keep it out of messages and mask it in diagnostics.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping

from ._errors import InvalidInput

__all__ = ["VariableError", "expand"]

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
    if "${" not in text:
        return text
    env = os.environ if environ is None else environ
    out: list[str] = []
    last = 0
    for match in _REFERENCE.finditer(text):
        out.append(text[last : match.start()])
        last = match.end()
        body = match.group(1)
        if match.group(2) is None:
            raise VariableError(f"has an unterminated ${{{_shown(body)} (no closing }})")
        out.append(_value(body, env, found))
    out.append(text[last:])
    return "".join(out)


def _value(body: str, env: Mapping[str, str], found: set[str] | None) -> str:
    if body.startswith("input:"):
        raise VariableError(
            f"uses ${{{_shown(body)}}}, a VS Code prompt for a value; mcp-sync cannot ask "
            "for one: export the value in an environment variable and write ${env:NAME}"
        )
    if body in _PREDEFINED:
        return _PREDEFINED[body]()
    match = _ENV_FORM.match(body)
    if match is None:
        raise VariableError(
            f"has ${{{_shown(body)}}}, which is not a variable mcp-sync expands "
            "(${VAR}, ${VAR:-default}, ${env:VAR}, ${userHome}, ${workspaceFolder})"
        )
    name, default = match.group(1), match.group(2)
    value = env.get(name, "")
    if value:
        if found is not None:
            found.add(value)
        return value
    if default is not None:
        return default
    raise VariableError(
        f"uses the variable {name}, which is not set (or is empty); "
        f"export it, or write ${{{name}:-default}}"
    )


def _shown(body: str) -> str:
    # A reference's text is from the file, not a value; still, keep it short
    # and free of control characters.
    text = body if len(body) <= 60 else body[:57] + "..."
    return ascii(text)[1:-1]
