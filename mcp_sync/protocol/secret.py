"""Values that refuse to print: what a config's ``${VAR}`` references expanded to.

A config value that took anything from the user's environment
(``"${GITHUB_TOKEN}"``, ``"Bearer ${TOKEN}"``, ``"--key=${KEY}"``, a URL with
``${KEY}`` in its query) is carried as a :class:`Secret`, not as a ``str``.
Everything that renders a value shows the text as it was written, with the
references in place of what they expanded to: ``str()``, ``repr()``,
``format()`` and f-strings, ``%s`` (so ``logging``), a pydantic model's
``repr`` and ``model_dump``. ``json.dumps``, ``"".join`` and ``+`` refuse it
(a ``TypeError``), and it cannot be pickled. Only :meth:`Secret.reveal`
gives the value, and only the transports call it, when they send: the spawn
of a stdio server (its argv, env and cwd) and the HTTP transports' options
(the URL and headers they send). Checks of a value's shape (a URL's scheme,
a header's characters) look at it too, and never put it in a message.

A value with no reference to the environment stays a plain ``str``: what the
file wrote (and ``${userHome}``, ``${workspaceFolder}``, a default) is not the
user's secret.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any, NoReturn, TypeAlias, final

if TYPE_CHECKING:
    from pydantic import GetCoreSchemaHandler
    from pydantic_core import CoreSchema

__all__ = ["Secret", "Text", "TextSchema", "expansions", "reveal", "shown"]


@final
class Secret:
    """A value taken (in whole or in part) from the user's environment.

    ``shown`` is the value as written (``"Bearer ${TOKEN}"``); ``value`` what
    it expanded to; ``found`` the pieces that came from the environment
    (masked wherever the server's own output is shown)."""

    __slots__ = ("_found", "_shown", "_value")
    _found: tuple[str, ...]
    _shown: str
    _value: str

    def __init__(self, shown: str, value: str, found: Iterable[str] = ()) -> None:
        object.__setattr__(self, "_shown", shown)
        object.__setattr__(self, "_value", value)
        object.__setattr__(self, "_found", tuple(found))

    def reveal(self) -> str:
        """The value. For the code that sends it, and nothing else."""
        return self._value

    def expansions(self) -> tuple[str, ...]:
        """The pieces that came from the environment, to mask in output."""
        return self._found

    def __str__(self) -> str:
        return self._shown

    def __repr__(self) -> str:
        return repr(self._shown)

    def __format__(self, spec: str) -> str:
        return format(self._shown, spec)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Secret):
            return NotImplemented
        # Constant time on the value: equality is no oracle for it. (hmac
        # loads OpenSSL: imported here, not by every connect.)
        import hmac

        return self._shown == other._shown and hmac.compare_digest(
            self._value.encode("utf-8", "surrogatepass"),
            other._value.encode("utf-8", "surrogatepass"),
        )

    def __hash__(self) -> int:
        return hash(self._shown)

    def __setattr__(self, name: str, value: object) -> NoReturn:
        raise AttributeError("a Secret is immutable")

    def __delattr__(self, name: str) -> NoReturn:
        raise AttributeError("a Secret is immutable")

    def __copy__(self) -> Secret:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> Secret:
        return self

    def __reduce_ex__(self, protocol: object) -> NoReturn:
        # A pickle would carry the value to wherever the bytes go.
        raise TypeError("a Secret cannot be pickled")

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        from pydantic_core import core_schema

        return core_schema.is_instance_schema(cls, serialization=_serialization())


Text: TypeAlias = str | Secret
"""A config value that may hold what a ``${VAR}`` expanded to."""


def reveal(value: Text) -> str:
    """The value of ``value`` (itself when a plain ``str``)."""
    return value.reveal() if isinstance(value, Secret) else value


def shown(value: Text) -> str:
    """``value`` as written: a :class:`Secret`'s references in place of its value."""
    return str(value)


def expansions(values: Iterable[object]) -> Iterator[str]:
    """The pieces from the environment held by the :class:`Secret` of ``values``
    (the values to mask in a server's output)."""
    for value in values:
        if isinstance(value, Secret):
            yield from value.expansions()


def _serialization() -> Any:
    from pydantic_core import core_schema

    # model_dump() shows the value as written, like repr().
    return core_schema.plain_serializer_function_ser_schema(str, when_used="always")


class TextSchema:
    """Pydantic metadata for a ``str | Secret`` field: a :class:`Secret` as it
    is, anything else through the strict string rules (``min_length``), so a
    bad value is reported as a string's error at the field itself."""

    __slots__ = ("min_length",)

    def __init__(self, *, min_length: int | None = None) -> None:
        self.min_length = min_length

    def __get_pydantic_core_schema__(self, source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        from pydantic_core import core_schema

        def keep_secret(value: Any, inner: core_schema.ValidatorFunctionWrapHandler) -> Any:
            return value if isinstance(value, Secret) else inner(value)

        return core_schema.no_info_wrap_validator_function(
            keep_secret,
            core_schema.str_schema(strict=True, min_length=self.min_length),
            serialization=_serialization(),
        )
