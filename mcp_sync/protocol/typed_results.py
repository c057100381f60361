"""Typed results: ``call_tool(..., result_type=Model)`` and ``Tool.output_model()``.

Both import pydantic when first used, never at ``import mcp_sync``.

``validate_result`` checks a result's ``structuredContent`` against the
caller's type (a pydantic model, a dataclass, a ``TypedDict``, ``list[int]``:
anything pydantic's ``TypeAdapter`` takes) and returns the validated value, or
raises :class:`ResultMismatch` naming the first field that does not fit. The
message never repeats a value the server sent: only the field's path and
pydantic's error type.

``output_model`` turns a tool's ``outputSchema`` into a pydantic model when the
schema is plain: objects with properties, arrays, the JSON primitives, string
enums and ``const``, ``X | null`` (``anyOf`` with ``null``, or a type list),
and local ``$ref``s into ``$defs``/``definitions`` that do not recurse. Anything
else (``oneOf``, a general ``anyOf``/``allOf``, ``not``, conditionals, a
remote or recursive ``$ref``, ``patternProperties``) raises
:class:`NotSupported` saying which keyword at which place.
"""

from __future__ import annotations

import functools
import keyword
import re
import sys
import types
import typing
from collections.abc import Mapping
from typing import Any, Literal, Protocol, TypeVar

from .errors import InvalidOption, NotSupported, ResultMismatch

__all__ = ["adapter_for", "output_model", "validate_result"]

T = TypeVar("T")


class _Result(Protocol):
    """A ``CallToolResult``, as far as validation sees it (this module
    imports nothing of the catalog's, so pydantic stays one lazy step away)."""

    @property
    def is_error(self) -> bool: ...

    @property
    def structured_content(self) -> Any: ...


class _Tool(Protocol):
    """A ``Tool``, as far as ``output_model`` sees it."""

    @property
    def name(self) -> str: ...

    @property
    def output_schema(self) -> Mapping[str, Any] | None: ...


def thaw(value: Any) -> Any:
    """Frozen JSON (read-only mappings, tuples) as plain dicts and lists."""
    if isinstance(value, Mapping):
        return {key: thaw(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [thaw(item) for item in value]
    return value

MAX_SCHEMA_DEPTH = 32
"""Nesting (objects, arrays, refs) past which ``output_model`` gives up."""
MAX_MODEL_FIELDS = 1000
"""Properties, over all the nested objects, past which ``output_model`` gives up."""


# --------------------------------------------------------------------- validation


@functools.lru_cache(maxsize=128)
def _cached_adapter(result_type: Any) -> Any:
    from pydantic import TypeAdapter

    return TypeAdapter(portable(result_type))


def adapter_for(result_type: Any) -> Any:
    """pydantic's ``TypeAdapter`` for ``result_type`` (cached), built before
    the call is sent: a type pydantic cannot use is the caller's mistake."""
    from pydantic import PydanticUserError, TypeAdapter

    name = getattr(result_type, "__name__", None) or repr(result_type)[:64]
    try:
        try:
            return _cached_adapter(result_type)
        except TypeError:  # an unhashable type: no cache
            return TypeAdapter(portable(result_type))
    except PydanticUserError as exc:
        if exc.code == "typed-dict-version":
            raise InvalidOption(
                f"result_type {name} holds a typing.TypedDict that cannot be rebuilt (one inside a dataclass "
                "or model, that contains itself, or whose annotations do not resolve), and pydantic takes "
                "typing.TypedDict only from Python 3.12: declare it with typing_extensions.TypedDict; "
                "nothing was sent"
            ) from exc
        raise _unusable(name, exc) from exc
    except TypeError as exc:
        raise _unusable(name, exc) from exc


def _unusable(name: str, exc: Exception) -> InvalidOption:
    return InvalidOption(
        f"result_type {name} cannot be validated with pydantic ({type(exc).__name__}); nothing was sent"
    )


# --------------------------------------------------------------------- typing.TypedDict before 3.12


def portable(result_type: Any) -> Any:
    """``result_type`` as pydantic takes it on this Python. Before 3.12
    pydantic refuses a ``typing.TypedDict`` (it needs
    ``typing_extensions.TypedDict``): each one, at the top or inside
    ``list[...]``, ``dict[...]``, ``X | None`` or ``Annotated[...]``, is
    rebuilt as a ``typing_extensions.TypedDict`` with the same name, keys,
    required and optional keys and docstring. The value validated is a plain
    ``dict`` either way. One nested where it cannot be reached (a dataclass's
    field) or that contains itself is left as it is, for pydantic to refuse."""
    if sys.version_info >= (3, 12):
        return result_type
    try:
        return _rebuilt(result_type, {})
    except _Unportable:
        return result_type


class _Unportable(Exception):
    """A TypedDict that contains itself, or whose hints do not resolve."""


def _is_typing_typeddict(value: Any) -> bool:
    return isinstance(value, type) and typing.is_typeddict(value) and type(value).__module__ == "typing"


def _rebuilt(value: Any, seen: dict[int, Any]) -> Any:
    if _is_typing_typeddict(value):
        return _rebuilt_typeddict(value, seen)
    origin, args = typing.get_origin(value), typing.get_args(value)
    if origin is None or not args or origin is Literal:
        return value
    if origin is typing.Annotated:
        inner = _rebuilt(args[0], seen)
        return value if inner is args[0] else typing.Annotated[(inner, *value.__metadata__)]
    new = tuple(_rebuilt(arg, seen) for arg in args)
    if all(a is b for a, b in zip(new, args, strict=True)):
        return value
    return _with_args(value, origin, new)


def _with_args(value: Any, origin: Any, args: tuple[Any, ...]) -> Any:
    """The generic ``value`` (``list[X]``, ``X | None``, ``typing.Dict[K, V]``) over ``args`` instead."""
    if origin is typing.Union or origin is types.UnionType:
        return typing.Union[args]  # noqa: UP007 - built from a tuple at run time
    if isinstance(value, types.GenericAlias):
        return types.GenericAlias(origin, args)
    copy_with = getattr(value, "copy_with", None)  # typing.List[...] and the like
    return copy_with(args) if copy_with is not None else value


def _rebuilt_typeddict(value: Any, seen: dict[int, Any]) -> Any:
    import typing_extensions  # pydantic's own dependency

    key = id(value)
    if key in seen:
        if seen[key] is None:
            raise _Unportable  # it contains itself
        return seen[key]
    seen[key] = None
    try:
        hints = typing.get_type_hints(value, include_extras=True)
    except Exception:  # a forward reference that does not resolve
        raise _Unportable from None
    # A key's own Required[...] or NotRequired[...] (typing's or typing_extensions')
    # decides; past that, the class's totality. (Under postponed annotations
    # Python 3.11 leaves those markers out of __required_keys__.)
    marks = {typing.Required: True, typing.NotRequired: False,
             typing_extensions.Required: True, typing_extensions.NotRequired: False}  # fmt: skip
    fields: dict[str, Any] = {}
    for name, hint in hints.items():
        bare, required = hint, name in value.__required_keys__
        while typing.get_origin(bare) in marks:
            required = marks[typing.get_origin(bare)]
            bare = typing.get_args(bare)[0]
        inner = _rebuilt(bare, seen)
        fields[name] = typing_extensions.Required[inner] if required else typing_extensions.NotRequired[inner]
    make: Any = typing_extensions.TypedDict  # (called with a name known only at run time)
    rebuilt: Any = make(value.__name__, fields)
    rebuilt.__doc__, rebuilt.__module__, rebuilt.__qualname__ = value.__doc__, value.__module__, value.__qualname__
    seen[key] = rebuilt
    return rebuilt


def validate_result(result: _Result, result_type: type[T], tool: str, adapter: Any = None) -> T:
    """``result``'s ``structuredContent`` validated as ``result_type``."""
    name = getattr(result_type, "__name__", None) or "result_type"
    if result.is_error:
        raise ResultMismatch(
            f"tool {tool!a} reported an error instead of a {name} (read the result's content)", "is_error", None, result
        )
    if result.structured_content is None:
        raise ResultMismatch(
            f"tool {tool!a} returned no structuredContent to validate as {name}", "missing", None, result
        )
    from pydantic import ValidationError

    if adapter is None:
        adapter = adapter_for(result_type)
    try:
        return adapter.validate_python(thaw(result.structured_content))  # type: ignore[no-any-return]
    except ValidationError as exc:
        errors = exc.errors(include_url=False, include_input=False, include_context=False)
        first = errors[0] if errors else {"loc": (), "type": "invalid"}
        field = _path(first.get("loc", ()))
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        where = f"field {field[:120]!a}" if field else "the value"  # a dict key may be the server's: bounded, escaped
        raise ResultMismatch(
            f"the structuredContent of tool {tool!a} does not fit {name}: {where} ({first.get('type')}){more}",
            "invalid",
            field or None,
            result,
        ) from None


def _path(loc: Any) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


# --------------------------------------------------------------------- models from schemas

_PRIMITIVES: dict[str, Any] = {"string": str, "integer": int, "number": float, "boolean": bool, "null": type(None)}
_REFUSED = (
    "oneOf", "allOf", "not", "if", "then", "else", "patternProperties", "dependentSchemas",
    "dependentRequired", "unevaluatedProperties", "prefixItems", "$dynamicRef", "$recursiveRef",
)  # fmt: skip
_ANNOTATIONS = frozenset({"title", "description", "default", "examples", "$schema", "$id", "$comment",
                          "deprecated", "readOnly", "writeOnly", "format"})  # fmt: skip


class _Builder:
    """Builds one tool's model; ``NotSupported`` names the first thing it cannot."""

    def __init__(self, tool: str, root: Mapping[str, Any]) -> None:
        self.tool = tool
        self.root = root
        self.fields = 0
        self.names: set[str] = set()
        self.refs: list[str] = []

    def refuse(self, why: str, where: str) -> NotSupported:
        return NotSupported(
            f"output_model() cannot build a model for the outputSchema of tool {self.tool!a}: "
            f"{why} at {where or '/'} (write the model yourself, or validate with validate_output=True)"
        )

    def type_of(self, schema: object, where: str, name: str, depth: int) -> Any:
        if depth > MAX_SCHEMA_DEPTH:
            raise self.refuse(f"nesting deeper than {MAX_SCHEMA_DEPTH}", where)
        if schema is True or schema == {}:
            return Any
        if not isinstance(schema, Mapping):
            raise self.refuse("a schema that is not an object", where)
        for word in _REFUSED:
            if word in schema:
                raise self.refuse(f"{word!a}", where)
        if "$ref" in schema:
            return self.ref(schema["$ref"], where, name, depth)
        if "anyOf" in schema:
            return self.nullable(schema["anyOf"], where, name, depth)
        if "const" in schema or "enum" in schema:
            return self.literal((schema["const"],) if "const" in schema else schema["enum"], where)
        return self.typed(schema, where, name, depth)

    def typed(self, schema: Mapping[str, Any], where: str, name: str, depth: int) -> Any:
        kind = schema.get("type")
        if isinstance(kind, (list, tuple)):
            kinds = [k for k in kind if k != "null"]
            if len(kinds) != 1 or len(kind) != len(set(kind)):
                raise self.refuse("a type list other than [T, null]", where)
            inner = self.typed({**schema, "type": kinds[0]}, where, name, depth)
            return inner | None if len(kind) == 2 else inner
        if kind is None:
            kind = "object" if "properties" in schema else "array" if "items" in schema else None
        if kind == "object":
            return self.object(schema, where, name, depth)
        if kind == "array":
            items = schema.get("items", True)
            if isinstance(items, (list, tuple)):
                raise self.refuse("tuple-style items", where)
            return list[self.type_of(items, f"{where}/items", name + "Item", depth + 1)]  # type: ignore[misc]
        if kind is None or kind in _PRIMITIVES:
            return _PRIMITIVES.get(kind, Any)  # type: ignore[arg-type]
        raise self.refuse(f"the type {str(kind)[:32]!a}", where)

    def ref(self, ref: object, where: str, name: str, depth: int) -> Any:
        match = re.fullmatch(r"#/(\$defs|definitions)/([^/~]+)", ref) if isinstance(ref, str) else None
        if match is None:
            raise self.refuse("a $ref that is not local to the schema's $defs", where)
        if ref in self.refs:
            raise self.refuse("a recursive $ref", where)
        defs = self.root.get(match.group(1))
        target = defs.get(match.group(2)) if isinstance(defs, Mapping) else None
        if target is None:
            raise self.refuse("a $ref to a definition that does not exist", where)
        self.refs.append(ref)  # type: ignore[arg-type]
        try:
            return self.type_of(target, f"/{match.group(1)}/{match.group(2)}", _class_name(match.group(2)), depth + 1)
        finally:
            self.refs.pop()

    def nullable(self, options: object, where: str, name: str, depth: int) -> Any:
        if not isinstance(options, (list, tuple)):
            raise self.refuse("'anyOf' that is not a list", where)
        rest = [option for option in options if option != {"type": "null"}]
        if len(rest) != 1 or len(options) != 2:
            raise self.refuse("'anyOf' other than T-or-null", where)
        return self.type_of(rest[0], f"{where}/anyOf", name, depth + 1) | None

    def literal(self, values: object, where: str) -> Any:
        if (
            not isinstance(values, (list, tuple))
            or not values
            or not all(isinstance(v, (str, int, bool)) or v is None for v in values)
        ):
            raise self.refuse("an enum of anything but strings, integers, booleans and null", where)
        return Literal[tuple(values)]

    def object(self, schema: Mapping[str, Any], where: str, name: str, depth: int) -> Any:
        properties = schema.get("properties")
        if properties is None:
            return dict[str, Any]
        if not isinstance(properties, Mapping):
            raise self.refuse("'properties' that is not an object", where)
        required = schema.get("required", [])
        if not isinstance(required, (list, tuple)):
            raise self.refuse("'required' that is not a list", where)
        from pydantic import ConfigDict, Field, create_model

        definitions: dict[str, Any] = {}
        for key, prop in properties.items():
            self.fields += 1
            if self.fields > MAX_MODEL_FIELDS:
                raise self.refuse(f"more than {MAX_MODEL_FIELDS} properties", where)
            path = f"{where}/properties/{key}"
            annotation = self.type_of(prop, path, name + _class_name(key), depth + 1)
            options: dict[str, Any] = {}
            if isinstance(prop, Mapping) and isinstance(prop.get("description"), str):
                options["description"] = prop["description"]
            python = _field_name(key, definitions)
            if python != key:
                options["alias"] = key
            if key in required:
                default: Any = ...
            elif isinstance(prop, Mapping) and "default" in prop:
                default = thaw(prop["default"])
            else:
                annotation = annotation | None
                default = None
            definitions[python] = (annotation, Field(default, **options))
        model_name = self.unique(name)
        doc = schema.get("description")
        return create_model(
            model_name,
            __config__=ConfigDict(populate_by_name=True, extra="allow"),
            __doc__=doc if isinstance(doc, str) else None,
            **definitions,
        )

    def unique(self, name: str) -> str:
        candidate, index = name, 1
        while candidate in self.names:
            index += 1
            candidate = f"{name}{index}"
        self.names.add(candidate)
        return candidate


def _class_name(text: str) -> str:
    parts = re.split(r"[^0-9A-Za-z]+", text)
    name = "".join(part[:1].upper() + part[1:] for part in parts if part)[:64]
    if not name or not name[0].isalpha():
        name = "M" + name
    return name


_RESERVED: frozenset[str] | None = None


def _field_name(key: str, taken: Mapping[str, Any]) -> str:
    """A Python name for property ``key``: itself when it can be, else a
    sanitised one (the property keeps its JSON name as the alias)."""
    global _RESERVED
    if _RESERVED is None:
        from pydantic import BaseModel

        _RESERVED = frozenset(dir(BaseModel))
    usable = key.isidentifier() and not keyword.iskeyword(key) and not key.startswith("_")
    if usable and key not in _RESERVED and key not in taken:
        return key
    base = re.sub(r"\W", "_", key).strip("_") or "field"
    if base[0].isdigit() or keyword.iskeyword(base) or base in _RESERVED:
        base = "f_" + base
    candidate, index = base, 1
    while candidate in taken or candidate in _RESERVED:
        index += 1
        candidate = f"{base}_{index}"
    return candidate


def output_model(tool: _Tool) -> Any:
    """``Tool.output_model``: a pydantic model class for the tool's ``outputSchema``."""
    schema = tool.output_schema
    if schema is None:
        raise NotSupported(f"tool {tool.name!a} publishes no outputSchema to build a model from")
    builder = _Builder(tool.name, schema)
    if schema.get("type", "object") != "object" and "$ref" not in schema:
        raise builder.refuse("a root that is not an object", "/")
    model = builder.type_of(schema, "", _class_name(tool.name) + "Output", 0)
    if not isinstance(model, type):
        raise builder.refuse("a root that is not an object with properties", "/")
    return model
