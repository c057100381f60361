"""The check of a tool's ``structuredContent`` against its ``outputSchema``,
with ``jsonschema``: on by default, off with ``connect(validate_output=False)``.

``jsonschema`` and ``google-re2`` are the optional extra
``mcp-sync-client[validation]``, imported by the first result checked, so
``import mcp_sync`` and ``connect`` stay fast. ``validate_output=True``
requires the extra (refused at connect without it); the default checks when
the extra is installed, and without it lets results through unchecked and
says so once per process (a WARNING, ``output_unchecked``). Each tool's
schema is compiled once per catalog snapshot. Remote ``$ref``s are never
fetched (jsonschema's ``referencing`` resolves only what the schema itself
contains).

Both the schema and the result come from the server, so the validation runs
in time linear in them and stops at a deadline:

- Every regular expression (``pattern``, ``patternProperties``, and the
  ``additionalProperties``/``unevaluatedProperties`` that depend on them) runs
  on RE2 through :mod:`mcp_sync.protocol.patterns`, never on ``re``. Each pattern is
  compiled when the tool's validator is built; one RE2 cannot run is refused
  as an invalid schema, naming the tool and where the pattern is. A match
  starts only when its worst case fits in the time left (else ``Timeout``).
- ``uniqueItems`` hashes the items instead of comparing every pair, and the
  ``unevaluated*`` keywords look indexes and keys up in sets.
- Every keyword call, and every step of the loops above, checks the deadline;
  past it the check stops with :class:`Timeout`.
- ``format`` stays an annotation (no format checker), and the schema itself
  is checked against its metaschema with the same keywords, without the
  metaschema's ``format: regex`` (which would compile with ``re``).

A subschema that declares its own ``$schema`` is evaluated with the same
keywords of its draft (jsonschema would otherwise switch to its stock class).
"""

from __future__ import annotations

import importlib.util
import logging
import math
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from .catalog import CallToolResult, Snapshot, Tool, thaw
from .errors import InvalidResponse, OutputMismatch, Timeout, missing_extra
from .patterns import PatternRefused, ServerPattern, TooCostly, server_pattern

__all__ = [
    "MAX_VALIDATION_SECONDS",
    "VALIDATION_FLOOR",
    "check_deadline",
    "check_structured_output",
    "require_jsonschema",
    "validation_available",
]

MAX_VALIDATION_SECONDS = 10.0
# The least time the check of a result gets, however close to its deadline
# the reply came: a reply that arrived in time is not thrown away for want of
# the microseconds its check takes, and a caller is back at most this late.
VALIDATION_FLOOR = 0.1


def check_deadline(call_deadline: float) -> float:
    """The deadline of the check of a result whose call had ``call_deadline``
    (``time.monotonic()``): the call's own, or ``VALIDATION_FLOOR`` s from now
    when that is later."""
    return max(call_deadline, time.monotonic() + VALIDATION_FLOOR)
"""How long checking one result may take when the caller gives no deadline."""

_lock = threading.Lock()  # guards building a snapshot's validator cache entries
_state = threading.local()  # .deadline: the monotonic time the running check must end by

Keyword = Callable[[Any, Any, Any, Any], Any]


class _Overtime(Exception):
    """The running check passed its deadline."""


def require_jsonschema() -> None:
    """Refuse ``validate_output=True`` up front when the extra is missing."""
    if not _installed("jsonschema"):
        raise missing_extra("option validate_output", "jsonschema", "validation")
    if not _installed("re2"):
        raise missing_extra("option validate_output", "google-re2", "validation")


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a finder that refuses it, a broken module
        return False


_available: list[bool] = []  # [whether the extra is installed], decided by the first check


def validation_available() -> bool:
    """Whether the validation extra (jsonschema and google-re2) is installed:
    looked up once per process, without importing either."""
    if not _available:
        _available.append(_installed("jsonschema") and _installed("re2"))
    return _available[0]


_unchecked_told = threading.Event()


def _tell_unchecked(tool: Tool) -> None:
    """Once per process: results go unchecked for want of the extra."""
    if _unchecked_told.is_set():
        return
    _unchecked_told.set()
    logging.getLogger("mcp_sync.session").warning(
        "the result of tool %s was not checked against its outputSchema: results are checked by default "
        "only with the validation extra (pip install 'mcp-sync-client[validation]'); "
        "connect(validate_output=False) checks none and says nothing",
        ascii(tool.name[:200]),
        extra={"mcp_event": "output_unchecked", "mcp_server": "", "mcp_tool": ascii(tool.name[:200])},
    )


def _tick() -> None:
    deadline = getattr(_state, "deadline", None)
    if deadline is not None and time.monotonic() > deadline:
        raise _Overtime


def _search(pattern: ServerPattern, text: str) -> bool:
    """``pattern.search`` within the seconds the running check has left."""
    deadline = getattr(_state, "deadline", None)
    left = MAX_VALIDATION_SECONDS if deadline is None else deadline - time.monotonic()
    return pattern.search(text, left)


# --------------------------------------------------------------------- the schema's patterns

# Keywords whose value is one subschema, a list of them, or a map of names to them.
_ONE = ("additionalProperties", "unevaluatedProperties", "additionalItems", "unevaluatedItems", "contains",
        "propertyNames", "not", "if", "then", "else", "items")  # fmt: skip
_LIST = ("allOf", "anyOf", "oneOf", "prefixItems", "items")
_MAP = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas", "dependencies")


def _patterns(schema: object, where: str = "", depth: int = 0) -> Iterator[tuple[str, str]]:
    """Every regular expression of ``schema`` with its JSON pointer. (A
    pattern somewhere else, reached only by a ``$ref`` into an unknown
    keyword, is compiled when it is first used, and refused the same way.)"""
    if not isinstance(schema, Mapping) or depth > 256:
        return
    if isinstance(schema.get("pattern"), str):
        yield schema["pattern"], f"{where}/pattern"
    patterned = schema.get("patternProperties")
    if isinstance(patterned, Mapping):
        for key in patterned:
            yield key, f"{where}/patternProperties/{_pointer(key)}"
    for word in _ONE:
        if isinstance(schema.get(word), Mapping):
            yield from _patterns(schema[word], f"{where}/{word}", depth + 1)
    for word in _LIST:
        if isinstance(schema.get(word), (list, tuple)):
            for index, item in enumerate(schema[word]):
                yield from _patterns(item, f"{where}/{word}/{index}", depth + 1)
    for word in _MAP:
        if isinstance(schema.get(word), Mapping):
            for key, item in schema[word].items():
                yield from _patterns(item, f"{where}/{word}/{_pointer(key)}", depth + 1)


def _pointer(key: object) -> str:
    return str(key).replace("~", "~0").replace("/", "~1")


def _refusal(tool: Tool, pattern: str, reason: str, where: str | None) -> InvalidResponse:
    at = f" at {where[:200]!a}" if where else ""
    return InvalidResponse(
        f"tool {tool.name!a} has an outputSchema that is not a valid JSON Schema for this client: "
        f"the pattern {pattern[:80]!a}{at} cannot be evaluated in linear time ({reason})"
    )


# --------------------------------------------------------------------- keywords

_BOOL = object()
_LIST_TAG = object()
_DICT_TAG = object()


def _identity(value: Any) -> Any:  # noqa: PLR0911
    """A hashable stand-in for a JSON value: equal exactly when JSON Schema
    calls the values equal (``1 == 1.0``, ``true != 1``, objects unordered)."""
    if isinstance(value, str) or value is None:
        return value
    if isinstance(value, bool):
        return (_BOOL, value)
    if isinstance(value, float) and math.isnan(value):  # NaN equals nothing
        return object()
    if isinstance(value, (int, float)):
        return value
    _tick()
    if isinstance(value, Mapping):
        return (_DICT_TAG, frozenset((key, _identity(item)) for key, item in value.items()))
    if isinstance(value, Sequence):
        return (_LIST_TAG, tuple(_identity(item) for item in value))
    return (type(value), id(value))


def _keywords(base: Any) -> dict[str, Keyword]:  # noqa: C901, PLR0915  (the overriding keywords, closed over jsonschema)
    from jsonschema import _keywords as stock  # type: ignore[import-untyped]
    from jsonschema import _legacy_keywords as legacy
    from jsonschema import _utils
    from jsonschema.exceptions import ValidationError  # type: ignore[import-untyped]

    def pattern(validator: Any, patrn: Any, instance: Any, schema: Any) -> Iterator[Any]:
        if validator.is_type(instance, "string") and not _search(server_pattern(patrn), instance):
            yield ValidationError(f"the string does not match {patrn[:80]!a}")

    def pattern_properties(validator: Any, patterned: Any, instance: Any, schema: Any) -> Iterator[Any]:
        if not validator.is_type(instance, "object"):
            return
        for patrn, subschema in patterned.items():
            compiled = server_pattern(patrn)
            for key, value in instance.items():
                _tick()
                if _search(compiled, key):
                    yield from validator.descend(value, subschema, path=key, schema_path=patrn)

    def additional_properties(validator: Any, extra: Any, instance: Any, schema: Any) -> Iterator[Any]:
        if not validator.is_type(instance, "object"):
            return
        properties = schema.get("properties", {})
        patterns = [server_pattern(p) for p in schema.get("patternProperties", {})]
        extras = []
        for key in instance:
            _tick()
            if key not in properties and not any(_search(p, key) for p in patterns):
                extras.append(key)
        if validator.is_type(extra, "object"):
            for key in extras:
                yield from validator.descend(instance[key], extra, path=key)
        elif not extra and extras:
            yield ValidationError(f"{len(extras)} additional properties are not allowed")

    def unique_items(validator: Any, unique: Any, instance: Any, schema: Any) -> Iterator[Any]:
        if not unique or not validator.is_type(instance, "array"):
            return
        seen: set[Any] = set()
        for item in instance:
            key = _identity(item)
            if key in seen:
                yield ValidationError("the array has non-unique elements")
                return
            seen.add(key)

    def unevaluated_items(finder: Any) -> Keyword:
        def keyword(validator: Any, rest: Any, instance: Any, schema: Any) -> Iterator[Any]:
            if not validator.is_type(instance, "array"):
                return
            evaluated = set(finder(validator, instance, schema))
            if any(index not in evaluated for index in range(len(instance))):
                yield ValidationError("unevaluated items are not allowed")

        return keyword

    def unevaluated_properties(old: bool) -> Keyword:
        def keyword(validator: Any, rest: Any, instance: Any, schema: Any) -> Iterator[Any]:
            if not validator.is_type(instance, "object"):
                return
            evaluated = _evaluated_keys(validator, instance, schema, old)
            for key in instance:
                _tick()
                if key not in evaluated and next(validator.descend(instance[key], rest, path=key), None) is not None:
                    yield ValidationError("unevaluated properties are not allowed or not valid")
                    return

        return keyword

    replaced: dict[str, Keyword] = {
        "pattern": pattern,
        "patternProperties": pattern_properties,
        "additionalProperties": additional_properties,
        "uniqueItems": unique_items,
    }
    found = base.VALIDATORS
    if found.get("unevaluatedItems") is stock.unevaluatedItems:
        replaced["unevaluatedItems"] = unevaluated_items(_utils.find_evaluated_item_indexes_by_schema)
    elif found.get("unevaluatedItems") is legacy.unevaluatedItems_draft2019:
        replaced["unevaluatedItems"] = unevaluated_items(legacy.find_evaluated_item_indexes_by_schema)
    if found.get("unevaluatedProperties") is stock.unevaluatedProperties:
        replaced["unevaluatedProperties"] = unevaluated_properties(old=False)
    elif found.get("unevaluatedProperties") is legacy.unevaluatedProperties_draft2019:
        replaced["unevaluatedProperties"] = unevaluated_properties(old=True)
    return {name: _ticking(replaced.get(name, keyword)) for name, keyword in found.items()}


def _ticking(keyword: Keyword) -> Keyword:
    def ticking(validator: Any, value: Any, instance: Any, schema: Any) -> Any:
        _tick()
        return keyword(validator, value, instance, schema)

    return ticking


def _evaluated_keys(validator: Any, instance: Any, schema: Any, old: bool) -> set[str]:
    """The keys of ``instance`` that ``schema`` evaluates (what
    ``unevaluatedProperties`` leaves alone): jsonschema's rules for draft
    2020-12, or 2019-09 when ``old``, with patterns on RE2 and a set."""
    _tick()
    if validator.is_type(schema, "boolean"):
        return set()
    keys: set[str] = set()
    for resolved in _references(validator, schema, old):
        inner = validator.evolve(schema=resolved.contents, _resolver=resolved.resolver)
        keys.update(_evaluated_keys(inner, instance, resolved.contents, old))
    if old:
        _own_keys_2019(validator, instance, schema, keys)
    else:
        _own_keys(validator, instance, schema, keys)
    _pattern_keys(instance, schema, keys)
    for subschema in _applied_subschemas(validator, instance, schema):
        keys.update(_evaluated_keys(validator, instance, subschema, old))
    return keys


def _references(validator: Any, schema: Any, old: bool) -> Iterator[Any]:
    """What the schema's references resolve to, each looked up as it is
    reached (validator._resolver: jsonschema's own helpers follow them this way)."""
    if schema.get("$ref") is not None:
        yield validator._resolver.lookup(schema["$ref"])
    if old and "$recursiveRef" in schema:
        from referencing.jsonschema import lookup_recursive_ref

        yield lookup_recursive_ref(validator._resolver)
    if not old and schema.get("$dynamicRef") is not None:
        yield validator._resolver.lookup(schema["$dynamicRef"])


def _own_keys_2019(validator: Any, instance: Any, schema: Any, keys: set[str]) -> None:
    """Draft 2019-09: keys named by the schema's own property keywords (all, for ``true``)."""
    for word in ("properties", "additionalProperties", "unevaluatedProperties"):
        value = schema.get(word)
        if value is True:
            keys.update(instance)
        elif validator.is_type(value, "object"):
            keys.update(key for key in value if key in instance)


def _own_keys(validator: Any, instance: Any, schema: Any, keys: set[str]) -> None:
    """Draft 2020-12: keys in ``properties``, and those the schema's
    additional or unevaluated properties subschema accepts."""
    if validator.is_type(schema.get("properties"), "object"):
        keys.update(key for key in schema["properties"] if key in instance)
    for word in ("additionalProperties", "unevaluatedProperties"):
        if (subschema := schema.get(word)) is not None:
            for key, value in instance.items():
                if key not in keys and next(validator.descend(value, subschema), None) is None:
                    keys.add(key)


def _pattern_keys(instance: Any, schema: Any, keys: set[str]) -> None:
    """Keys matching one of the schema's ``patternProperties`` (on RE2)."""
    if "patternProperties" not in schema:
        return
    for patrn in schema["patternProperties"]:
        compiled = server_pattern(patrn)
        for key in instance:
            _tick()
            if key not in keys and _search(compiled, key):
                keys.add(key)


def _applied_subschemas(validator: Any, instance: Any, schema: Any) -> Iterator[Any]:
    """The subschemas of the schema's applicators that apply to ``instance``,
    in jsonschema's order, each decided as it is reached."""
    for key, subschema in (schema.get("dependentSchemas") or {}).items():
        if key in instance:
            yield subschema
    for word in ("allOf", "oneOf", "anyOf"):
        for subschema in schema.get(word, ()):
            if next(validator.descend(instance, subschema), None) is None:
                yield subschema
    if "if" in schema:
        if validator.evolve(schema=schema["if"]).is_valid(instance):
            yield schema["if"]
            if "then" in schema:
                yield schema["then"]
        elif "else" in schema:
            yield schema["else"]


# --------------------------------------------------------------------- validator classes

_classes: dict[Any, Any] = {}


def _safe_class(base: Any) -> Any:
    """jsonschema's validator class ``base`` with the keywords above (one per
    draft, built once)."""
    with _lock:
        made = _classes.get(base)
    if made is not None:
        return made
    if getattr(base, "_mcp_sync_safe", False):
        return base
    import attrs
    import jsonschema

    made = jsonschema.validators.extend(base, validators=_keywords(base))
    made._mcp_sync_safe = True

    def evolve(self: Any, **changes: Any) -> Any:
        # jsonschema's own evolve, except that a subschema's "$schema" picks
        # the safe class of its draft, never the stock one.
        schema = changes.setdefault("schema", self.schema)
        chosen = _safe_class(jsonschema.validators.validator_for(schema, default=type(self)))
        for field in attrs.fields(type(self)):
            if field.init and field.alias not in changes:
                changes[field.alias] = getattr(self, field.name)
        return chosen(**changes)

    made.evolve = evolve
    with _lock:
        return _classes.setdefault(base, made)


def _build(tool: Tool) -> Any:
    import jsonschema

    assert tool.output_schema is not None
    schema = thaw(tool.output_schema)
    for pattern, where in _patterns(schema):
        _tick()
        try:
            server_pattern(pattern)
        except PatternRefused as refused:
            raise _refusal(tool, pattern, refused.reason, where) from None
    cls = _safe_class(jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator))
    meta = _safe_class(jsonschema.validators.validator_for(cls.META_SCHEMA, default=cls))
    # format_checker=None: the metaschema's "format": "regex" would compile
    # the server's patterns with re; they were compiled with RE2 above.
    if next(meta(cls.META_SCHEMA, format_checker=None).iter_errors(schema), None) is not None:
        raise InvalidResponse(f"tool {tool.name!a} has an outputSchema that is not a valid JSON Schema")
    return cls(schema, format_checker=None)  # "format" annotates, it does not assert


def _validator(snapshot: Snapshot, tool: Tool) -> Any:
    cached = snapshot.validators.get(tool.name)
    if cached is not None:
        return cached
    validator = _build(tool)
    with _lock:
        return snapshot.validators.setdefault(tool.name, validator)


def check_structured_output(
    snapshot: Snapshot, tool: Tool, result: CallToolResult, deadline: float | None = None
) -> None:
    """Raise :class:`OutputMismatch` naming the tool and the first failing
    path when a successful result does not match the tool's ``outputSchema``
    (:class:`InvalidResponse` when the schema cannot be evaluated), or :class:`Timeout` when
    checking it would run past ``deadline`` (a ``time.monotonic()`` value;
    without one, :data:`MAX_VALIDATION_SECONDS` from now)."""
    if tool.output_schema is None or result.is_error:
        return
    if not validation_available():  # the default, without the extra (True required it at connect)
        _tell_unchecked(tool)
        return
    if result.structured_content is None:
        raise OutputMismatch(
            f"tool {tool.name!a} has an outputSchema but its result has no structuredContent",
            tool.name, "missing", result=result,
        )  # fmt: skip
    within = "before the call's deadline" if deadline is not None else f"within {MAX_VALIDATION_SECONDS:g} s"
    outer = getattr(_state, "deadline", None)
    _state.deadline = time.monotonic() + MAX_VALIDATION_SECONDS if deadline is None else deadline
    try:
        validator = _validator(snapshot, tool)
        error = next(iter(validator.iter_errors(thaw(result.structured_content))), None)
    except _Overtime:
        raise Timeout(
            f"the structuredContent of tool {tool.name!a} could not be checked against its outputSchema {within}"
        ) from None
    except PatternRefused as refused:  # a pattern reached only through a $ref
        raise _refusal(tool, refused.pattern, refused.reason, None) from None
    except TooCostly as costly:
        raise Timeout(
            f"the structuredContent of tool {tool.name!a} could not be checked against its outputSchema {within}: "
            f"matching a string of {costly.length} bytes against the pattern {costly.pattern[:80]!a} "
            f"could take up to {costly.seconds:.1f} s"
        ) from None
    except InvalidResponse:
        raise
    except Exception:  # a hostile schema (an unresolvable $ref...)
        raise InvalidResponse(
            f"the structuredContent of tool {tool.name!a} could not be checked against its outputSchema"
        ) from None
    finally:
        _state.deadline = outer
    if error is not None:
        where = "/".join(str(part) for part in error.absolute_path)[:200]
        keyword = str(error.validator)[:200]
        raise OutputMismatch(
            f"the structuredContent of tool {tool.name!a} does not match its outputSchema "
            f"(keyword {keyword[:40]!a} at {('/' + where)!a})",
            tool.name, "invalid", "".join("/" + _pointer(part) for part in error.absolute_path)[:200], keyword, result,
        )  # fmt: skip
