"""The call plan: one driver for every request whose result may not be the
final one, in both eras.

``tools/call`` (and ``prompts/get``, ``resources/read``, and every other
request the session sends through :func:`ask`) goes through :func:`drive`:
send the request the era's way; if the result asks for input
(``input_required``, modern era) answer its questions with the session's
handlers and send the request again with the answers and the server's
``requestState``; if it is a task handle, let the era follow the task to its
result. The era supplies the pieces (framing, result kinds, task following);
the driver only sequences them, like the official SDK's input-required loop.

:func:`session_call` adds what only ``tools/call`` has: its checks before
anything is sent, the choice of a task, and for a call that is followed
(:func:`followed_call`) a progress route (the caller's callbacks, a deadline
progress may move).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol

from .. import _log
from ..protocol.catalog import CallToolResult, Snapshot, parse_call_result
from ..protocol.errors import InputRequired, InvalidResponse, ProtocolError, ToolNotFound
from ..protocol.frames import check_arguments
from ..protocol.limits import request_budget, seconds
from ..protocol.output_check import check_deadline, check_structured_output
from .eras.contract import COMPLETE, INPUT_REQUIRED, MAX_INPUT_REQUESTS, MAX_INPUT_ROUNDS, TASK, EraCore
from .progress import ProgressCallback, open_route

if TYPE_CHECKING:
    from .progress import ProgressRoute, ProgressRoutes

__all__ = [
    "CallingCore",
    "answer_all",
    "ask",
    "drive",
    "followed_call",
    "input_requests",
    "not_in_catalog",
    "plain_call",
    "session_call",
]

_KNOWN_INPUT_METHODS = ("elicitation/create", "sampling/createMessage", "roots/list")


def drive(  # noqa: PLR0917
    core: EraCore,
    method: str,
    params: Mapping[str, Any],
    deadline: float,
    describe: Callable[[], str],
    route: ProgressRoute | None = None,
    name: str = "",
) -> Any:
    """``method`` with ``params`` to its final result, within ``deadline``
    (the route's, which progress may move, when there is one). With a
    ``route`` the request is followed as it comes and may become a task of
    tool ``name``: ``route`` is given exactly for a call that may. (``route``
    and ``name`` are not keyword-only: a keyword-only default costs a dict
    lookup on every request, and most requests leave both out.)"""
    era = core.era
    if route is None:
        if era.plain_requests:
            # The era adds nothing to a request nor to its result (plain
            # JSON-RPC, no input rounds): the core sends it as it is.
            left = deadline - time.monotonic()
            sent = params if type(params) is dict else dict(params)
            return core.request(method, sent, left if left > 0.0 else 0.0, describe)
        result = era.request(core, method, params, deadline, describe)
        if not era.input_rounds:
            return result  # an era without input rounds: one request, one result
        return rounds(core, method, params, deadline, describe, result)
    tasks = name != ""
    result = era.request(core, method, params, route.deadline, describe, watch=route, tasks=tasks)
    if not tasks and not era.input_rounds:
        return result
    return rounds(core, method, params, deadline, describe, result, route=route, name=name)


def rounds(  # noqa: PLR0917
    core: EraCore,
    method: str,
    params: Mapping[str, Any],
    deadline: float,
    describe: Callable[[], str],
    result: Any,
    *,
    route: ProgressRoute | None = None,
    name: str = "",
) -> Any:
    """What :func:`drive` does after the first result: a task followed, or
    another round for each ``input_required``, until a final result."""
    era = core.era
    tasks = route is not None and name != ""
    kind = era.result_kind(result, method, tasks=tasks)
    if kind == COMPLETE:
        return result  # most requests: one round, nothing more to drive
    for _ in range(MAX_INPUT_ROUNDS):
        if kind == TASK:
            assert route is not None
            return era.follow_task(core, name, result, route, describe)
        if kind != INPUT_REQUIRED:
            return result
        # Each retry is the original request plus this round's answers and
        # state: nothing of an earlier round is carried over.
        until = deadline if route is None else route.deadline
        where = subject(core.server, method, params)
        requests, state = input_requests(result, where)
        retry = dict(params)
        if requests is not None:
            retry["inputResponses"] = answer_all(core, requests, where, until)
        if state is not None:
            retry["requestState"] = state
        if route is not None:
            route.retry()  # the new request's progress counts from scratch
        result = era.request(
            core, method, retry, deadline if route is None else route.deadline, describe, watch=route, tasks=tasks
        )
        kind = era.result_kind(result, method, tasks=tasks)
    if kind == TASK:
        assert route is not None
        return era.follow_task(core, name, result, route, describe)
    if kind != INPUT_REQUIRED:
        return result
    raise ProtocolError(
        f"{subject(core.server, method, params)} asked for input more than {MAX_INPUT_ROUNDS} times in a row"
    )


def ask(core: EraCore, method: str, params: dict[str, Any], timeout: float, describe: Callable[[], str]) -> Any:
    """A request and its final result, the way the session's era sends it."""
    return drive(core, method, params, time.monotonic() + timeout, describe)


def _tool_call(name: str, server: str, option: str, timeout_ms: int) -> str:
    """A plain call, for a timeout's message (built only then)."""
    return f"tool {name!a} on server {server!r} ({option}={timeout_ms})"


def plain_call(  # noqa: PLR0917
    core: EraCore, name: str, arguments: Any, timeout_ms: int, option: str, meta: dict[str, Any]
) -> CallToolResult:
    """``tools/call`` of tool ``name`` with no progress followed and no task:
    one request to its final result (input rounds answered), within the
    call's deadline, as :func:`drive` sends any request. ``arguments`` and
    ``meta`` have been checked."""
    params: dict[str, Any] = {"name": name, "arguments": arguments}
    if meta:
        params["_meta"] = meta
    # A partial, not a closure: the description is built only for a timeout.
    plain = partial(_tool_call, name, core.server, option, timeout_ms)
    era = core.era
    if era.plain_requests:
        # As drive() sends it: the era adds nothing, the core sends it as it is.
        result = core.request("tools/call", params, seconds(timeout_ms), plain)
    else:
        result = drive(core, "tools/call", params, time.monotonic() + seconds(timeout_ms), plain)
    return parse_call_result(result, name, era.any_structured)


class CallingCore(EraCore, Protocol):
    """The session core as ``Session.call_tool`` drives it: the era's view,
    plus the catalog a call is looked up in and the output check's switch."""

    catalog: Snapshot
    validate_output: bool


def not_in_catalog(name: str, server: str) -> ToolNotFound:
    return ToolNotFound(f"tool {name!a} is not in the catalog of server {server!r}")


def session_call(  # noqa: PLR0917
    core: CallingCore,
    routes: ProgressRoutes,
    name: str,
    arguments: Mapping[str, Any] | None,
    timeout_ms: int | None,
    traceparent: str | None,
    meta: Mapping[str, Any] | None,
    on_progress: ProgressCallback | None,
    extends: bool,
    max_timeout_ms: int | None,
    task: bool | None,
) -> CallToolResult:
    """``Session.call_tool``: everything refused before a byte is sent (an
    ended session, a tool not in the catalog, bad arguments, ``_meta`` or
    ``traceparent``, a task the era or tool refuses), then the call (plain,
    or followed: :func:`followed_call`), then the structured output's check
    when the session validates it. ``routes``: the session's progress tokens
    (``core.inbound.progress``)."""
    terminal = core.terminal
    if terminal is not None:
        raise terminal._copy()
    catalog = core.catalog  # one snapshot for the whole call, even if a refresh swaps it
    tool = catalog.by_name.get(name)
    if tool is None:
        raise not_in_catalog(name, core.server)
    limits = core.limits
    timeout_ms, option = request_budget(limits, timeout_ms)
    args: Any = {} if arguments is None else arguments
    check_arguments(args, limits.max_outbound_frame_bytes)
    sent: dict[str, Any] = {}
    if meta is not None:  # the caller's keys; the library's (below, and the era's) win
        from .extensions import check_meta

        sent = check_meta(meta, limits.max_outbound_frame_bytes)
    if traceparent is not None:  # W3C trace context, in the request's _meta
        sent["traceparent"] = _log.check_traceparent(traceparent)
    # Asked once (it may refuse task=True), before anything is sent.
    as_task = core.era.use_task(core, tool, task)
    checked = core.validate_output and tool.output_schema is not None
    started = time.monotonic() if checked else 0.0
    if on_progress is None and not as_task:
        # Nothing to follow: no progress route, no task.
        outcome = plain_call(core, name, args, timeout_ms, option, sent)
    else:
        outcome = followed_call(
            core, routes, name, args, timeout_ms, option, sent, on_progress, extends, max_timeout_ms, as_task
        )
    if checked:
        # The check runs within the call's deadline (the longest it may
        # have been extended to, when progress extends it).
        budget = max_timeout_ms if extends and max_timeout_ms else timeout_ms
        check_structured_output(catalog, tool, outcome, check_deadline(started + seconds(budget)))
    return outcome


def followed_call(  # noqa: PLR0917
    core: EraCore,
    routes: ProgressRoutes,
    name: str,
    arguments: Any,
    timeout_ms: int,
    option: str,
    meta: dict[str, Any],
    on_progress: ProgressCallback | None,
    extends: bool,
    max_timeout_ms: int | None,
    as_task: bool,
) -> CallToolResult:
    """``tools/call`` of tool ``name`` in either era, with its progress
    followed as it comes (and its deadline moved by it when asked), or as a
    task: what :func:`plain_call` is not. ``as_task``: what the era's
    ``use_task`` decided for this call (the caller asks it once).
    ``arguments`` and ``meta`` have been checked."""
    era = core.era
    params: dict[str, Any] = {"name": name, "arguments": arguments}
    route, hard_ms = open_route(routes, on_progress, timeout_ms, extends, max_timeout_ms)
    extended = f", extended by progress up to {hard_ms} ms" if extends and hard_ms > timeout_ms else ""

    def describe() -> str:
        return f"tool {name!a} on server {core.server!r} ({option}={timeout_ms}{extended})"

    try:
        if on_progress is not None:
            meta = {**meta, "progressToken": route.token}
        if meta:
            params["_meta"] = meta
        if as_task:
            params = era.task_params(params, route)
        result = drive(core, "tools/call", params, route.deadline, describe, route, name if as_task else "")
        return parse_call_result(result, name, any_structured=era.any_structured)
    finally:
        routes.close(route)


# ------------------------------------------------------------------ input_required


def subject(server: str, method: str, params: Mapping[str, Any]) -> str:
    """What a request is about, for messages: the tool, prompt or resource."""
    if method == "resources/read":
        return f"resource {str(params.get('uri'))[:200]!a} on server {server!r}"
    kind = "prompt" if method == "prompts/get" else "tool"
    return f"{kind} {params.get('name')!a} on server {server!r}"


def input_requests(
    result: Mapping[str, Any], where: str, *, state: bool = True
) -> tuple[dict[str, dict[str, Any]] | None, str | None]:
    """The ``inputRequests`` (and ``requestState``) of an ``input_required``
    result, or of a task waiting for input (``state=False``: a task has
    no request state, and must ask for something), after their checks."""
    requests = result.get("inputRequests")
    request_state = result.get("requestState") if state else None
    if request_state is not None and not isinstance(request_state, str):
        raise InvalidResponse(f"{where} sent a requestState that is not a string")
    if requests is None:
        if request_state is None:
            raise InvalidResponse(f"{where} answered input_required with neither inputRequests nor requestState")
        return None, request_state
    if not isinstance(requests, dict):
        raise InvalidResponse(f"{where} sent inputRequests that is not an object")
    if len(requests) > MAX_INPUT_REQUESTS:
        raise InvalidResponse(f"{where} sent more than {MAX_INPUT_REQUESTS} input requests at once")
    for request in requests.values():
        if not (
            isinstance(request, dict)
            and isinstance(request.get("method"), str)
            and isinstance(request.get("params", {}), (dict, type(None)))
        ):
            raise InvalidResponse(f"{where} sent an input request without a method")
    return requests, request_state


def answer_all(
    core: EraCore, requests: Mapping[str, Mapping[str, Any]], where: str, deadline: float
) -> dict[str, Any]:
    """The client's answers to ``requests``, keyed like them: each made by
    the session's handlers (``_Core.answer_input_request``: on the handler
    pool, as a server request would be) by ``deadline``."""
    answers: dict[str, Any] = {}
    for key, request in requests.items():
        try:
            answers[key] = core.answer_input_request(request["method"], request.get("params") or {}, deadline)
        except InputRequired:
            asked = tuple(str(r["method"]) for r in requests.values())
            raise InputRequired(
                f"{where} needs input this client cannot give: "
                f"{', '.join(_shown_method(m) for m in asked)} (no handler answers it)",
                asked,
            ) from None
    return answers


def _shown_method(method: str) -> str:
    # A method name is the server's text: only the known ones are named.
    return method if method in _KNOWN_INPUT_METHODS else "a request this client does not know"
