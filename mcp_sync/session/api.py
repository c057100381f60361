"""``Session``: the whole public surface of a connected server, in one class.

Each method is here, with its docstring; the work is done by the core
(``session.core._Core``: the request table, the handshake, tool calls, the end of
the session) or by a feature module written against the narrow core protocol
(``session.feature_contract.Core``): resources, prompts and completion (``session.resources``), the
log level (``session.server_logs``), roots (``session.handlers``), catalog refresh
(``session.refresh``) and health (``session.health``). ``Session`` holds only its core:
the I/O threads hold the core, never the Session, so a forgotten Session can
be garbage-collected and its finalizer can close the core.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, TypeAlias, TypeVar, overload

from .. import _log
from . import cancel as _cancel
from . import health as _health
from . import refresh as _refresh
from . import server_logs as _serverlog
from . import submit as _submit
from .call_plan import session_call
from .core import _Core, _not_in_catalog
from .listing import WHOLE_LIST

if TYPE_CHECKING:
    from ..protocol.catalog import CallToolResult, ServerInfo, Tool
    from ..protocol.errors import McpError
    from ..protocol.limits import Limits
    from ..protocol.roots import RootsProvider
    from .call_plan import CallingCore
    from .cancel import CancelToken
    from .paging import Page
    from .progress import ProgressCallback
    from .resources import (
        Completion,
        GetPromptResult,
        Prompt,
        ReadResourceResult,
        Resource,
        ResourceTemplate,
    )
    from .skills import Skill, SkillFile
    from .submit import ToolCall

__all__ = ["Session"]

_T = TypeVar("_T")
_Meta = Mapping[str, Any] | None
_Cancel: TypeAlias = "CancelToken | None"


def _session_bundle(session: Session, include: object = None, exclude: object = None) -> dict[str, str]:
    # Jupyter's display: the server, its era, its health and its tools.
    from ..protocol.display import bundle

    return bundle(session, session.limits)


def _session_facts(session: Session) -> list[tuple[str, str]]:
    # What a notebook shows of a session: its server, era, health and tools.
    return _health.facts(session._core, session.server_info, f"{session.era}, protocol {session.protocol_version}")


class Session:
    """A connected MCP server. Made by :func:`mcp_sync.connect`.

    Thread-safe: any number of threads may call :meth:`call_tool` (and every
    other method) at once, each blocking on its own deadline. :meth:`close`
    may be called from any thread, any number of times. A session that is
    garbage-collected, or still open when the interpreter exits, is closed too.
    A method that sends a request of its own takes ``meta=``: keys added to
    that request's ``_meta`` (the library's own keys win).
    """

    __slots__ = ("__weakref__", "_calls", "_core", "_finalizer", "server_info")

    def __init__(self, core: _Core, server_info: ServerInfo) -> None:
        self._core = core
        self._calls: list[_submit.Calls | None] = [None]  # made at the first submit_tool
        self.server_info = server_info
        """The name and version the server disclosed (untrusted text)."""
        self._finalizer = weakref.finalize(self, core.close)

    # ------------------------------------------------------------ the session

    @property
    def era(self) -> str:
        """``"modern"`` (2026-07-28: no handshake, metadata on every request) or
        ``"legacy"`` (a session opened by the ``initialize`` handshake)."""
        return self._core.era.name

    @property
    def server(self) -> str:
        """The name this session was given in ``connect(server=...)``."""
        return self._core.server

    @property
    def protocol_version(self) -> str:
        """The protocol revision in use, one of ``SUPPORTED_PROTOCOL_VERSIONS``:
        the one the server chose in the handshake, or in the modern era the one
        every request names."""
        version = self._core.era.version
        assert version is not None
        return version

    @property
    def limits(self) -> Limits:
        """The limits in force."""
        return self._core.limits

    @property
    def closed(self) -> bool:
        """Whether the session has ended, for any reason."""
        return self._core.terminal is not None

    @property
    def server_capabilities(self) -> Mapping[str, Any]:
        """The capabilities the server declared (frozen, untrusted)."""
        return self._core.server_capabilities

    @property
    def message_hook_failures(self) -> int:
        """How many times the ``on_message`` hook raised (each logged; the session went on)."""
        tap = self._core.message_tap
        return 0 if tap is None else tap.failures

    # ------------------------------------------------------------ tools

    @property
    def tools(self) -> tuple[Tool, ...]:
        """The deep-frozen catalog snapshot, in the server's order (replaced
        whole by :meth:`refresh_tools`)."""
        return self._core.catalog.tools

    @property
    def tools_changed(self) -> bool:
        """Whether the server said its tool list changed since the walk that
        made :attr:`tools` began (``notifications/tools/list_changed``)."""
        return self._core.inbound.changed["tools"].is_set()

    @property
    def last_refresh_error(self) -> McpError | None:
        """Why the last refresh (explicit or automatic) failed, or ``None``
        if it succeeded (or none ran)."""
        return self._core.inbound.last_refresh_error

    def tool(self, name: str) -> Tool:
        """The catalog entry named ``name``; :class:`ToolNotFound` if absent."""
        tool = self._core.catalog.by_name.get(name)
        if tool is None:
            raise _not_in_catalog(name, self.server)
        return tool

    @overload
    def call_tool(
        self, name: str, arguments: Mapping[str, Any] | None = None, *, timeout_ms: int | None = None,
        traceparent: str | None = None, on_progress: ProgressCallback | None = None,
        progress_extends_deadline: bool = False, max_timeout_ms: int | None = None, task: bool | None = None,
        meta: _Meta = None, result_type: None = None, cancel: _Cancel = None,
    ) -> CallToolResult: ...  # fmt: skip

    @overload
    def call_tool(
        self, name: str, arguments: Mapping[str, Any] | None = None, *, timeout_ms: int | None = None,
        traceparent: str | None = None, on_progress: ProgressCallback | None = None,
        progress_extends_deadline: bool = False, max_timeout_ms: int | None = None, task: bool | None = None,
        meta: _Meta = None, result_type: type[_T], cancel: _Cancel = None,
    ) -> _T: ...  # fmt: skip

    def call_tool(
        self, name: str, arguments: Mapping[str, Any] | None = None, *, timeout_ms: int | None = None,
        traceparent: str | None = None, on_progress: ProgressCallback | None = None,
        progress_extends_deadline: bool = False, max_timeout_ms: int | None = None, task: bool | None = None,
        meta: _Meta = None, result_type: type[Any] | None = None, cancel: _Cancel = None,
    ) -> Any:  # fmt: skip
        """Call one tool and block for its result.

        ``arguments`` must be a dict with str keys (``None`` sends ``{}``).
        ``timeout_ms`` overrides ``request_timeout_ms`` for this call. A result
        with ``is_error=True`` is the tool reporting its own failure; a failure
        of the session raises a :class:`McpError`. ``traceparent``, a W3C
        trace context value, is sent in the request's ``_meta``.

        ``on_progress(progress, total, message)`` is called on this thread for
        each progress notification of this call; with
        ``progress_extends_deadline=True`` each one moves the deadline to now
        plus the timeout, never past ``max_timeout_ms`` (default ten times the
        timeout). Tasks: a tool whose ``execution.taskSupport`` is
        ``"required"`` (``task=True``: ``"optional"``) is called as a task and
        followed to its result (``task=False`` does not declare the modern
        tasks extension); ``input_required`` is answered by the handlers.

        ``result_type`` (a pydantic model, dataclass, ``TypedDict``...):
        return the result's ``structuredContent`` validated as that type
        instead of the :class:`CallToolResult`; :class:`ResultMismatch` (an
        ``InvalidResponse``) names the first field that does not fit, and is
        raised too for a result with ``is_error`` or without structured
        content. ``tool(name).output_model()`` builds such a model.

        ``meta`` adds keys to the request's ``_meta`` (an extension's, say):
        the library's own keys (``traceparent``, ``progressToken``, and in
        2026-07-28 the ``io.modelcontextprotocol/*`` protocol keys) win.

        ``cancel`` (a :class:`~mcp_sync.CancelScope` or a ``threading.Event``) fired
        from another thread: :class:`~mcp_sync.Cancelled` at once, the server told.
        Every method below that waits on the server takes ``cancel=`` too.
        """
        if result_type is not None:
            from ..protocol.typed_results import adapter_for, validate_result

            adapter = adapter_for(result_type)
            plain = self.call_tool(
                name, arguments, timeout_ms=timeout_ms, traceparent=traceparent, on_progress=on_progress,
                progress_extends_deadline=progress_extends_deadline, max_timeout_ms=max_timeout_ms, task=task,
                meta=meta, cancel=cancel,
            )  # fmt: skip
            return validate_result(plain, result_type, name, adapter)
        core = self._core
        if cancel is not None:
            return _cancel.call_tool(
                core, core.inbound.progress, cancel, name, arguments, timeout_ms, traceparent, meta,
                on_progress, progress_extends_deadline, max_timeout_ms, task,
            )  # fmt: skip
        if _log.CALLS.isEnabledFor(_log.DEBUG):
            return _logged_call(
                core, name, arguments, timeout_ms, traceparent, on_progress, progress_extends_deadline,
                max_timeout_ms, task, meta,
            )  # fmt: skip
        return session_call(
            core, core.inbound.progress, name, arguments, timeout_ms, traceparent, meta,
            on_progress, progress_extends_deadline, max_timeout_ms, task,
        )  # fmt: skip

    def submit_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        timeout_ms: int | None = None,
        traceparent: str | None = None,
        meta: _Meta = None,
    ) -> ToolCall:
        """Send one tool call and return at once with its handle, a
        ``concurrent.futures.Future`` (:class:`ToolCall`): ``result()`` is what
        :meth:`call_tool` would have returned or raised, :class:`Timeout` at the
        call's deadline (``timeout_ms``, default ``request_timeout_ms``, counted
        from now) with no thread blocked meanwhile; ``cancel()`` withdraws it
        and tells the server. What :meth:`call_tool` refuses before sending
        (an unknown tool, bad arguments, a closed session) is raised here.

        Never a task, and no progress callback: a tool that must run as a task
        is refused (use :meth:`call_tool`). A modern ``input_required`` round
        is answered by the handlers on a library thread, as for call_tool.
        """
        core = self._core
        calls = self._calls[0] or _submit.calls_of(core, self._calls)
        return _submit.submit_tool(calls, name, arguments, timeout_ms, traceparent, meta)

    def map_tool(
        self,
        name: str,
        arguments: Iterable[Mapping[str, Any] | None],
        *,
        max_in_flight: int = 16,
        timeout_ms: int | None = None,
        traceparent: str | None = None,
        meta: _Meta = None,
    ) -> Iterator[CallToolResult]:
        """Call ``name`` once for each of ``arguments``, keeping up to
        ``max_in_flight`` calls in flight, and yield the results in order
        (lazily: at most ``max_in_flight`` calls and results are held).

        Each call has its own deadline, from when it is sent. The first call
        that fails raises its error at its place in the order, after the calls
        still in flight are cancelled; the results before it were yielded. A
        result with ``is_error=True`` is a result, as with :meth:`call_tool`.
        Closing the iterator early cancels the calls in flight too.
        """

        def submit(args: Mapping[str, Any] | None) -> ToolCall:
            return self.submit_tool(name, args, timeout_ms=timeout_ms, traceparent=traceparent, meta=meta)

        return _submit.map_tool(submit, arguments, max_in_flight)

    @overload
    def list_tools(self, *, timeout_ms: int | None = None, meta: _Meta = None,
                   cancel: _Cancel = None) -> tuple[Tool, ...]: ...  # fmt: skip
    @overload
    def list_tools(self, *, cursor: str | None, timeout_ms: int | None = None, meta: _Meta = None,
                   cancel: _Cancel = None) -> Page[Tool]: ...  # fmt: skip
    def list_tools(self, *, cursor: Any = WHOLE_LIST, timeout_ms: int | None = None, meta: _Meta = None,
                   cancel: _Cancel = None) -> Any:  # fmt: skip
        """The server's tools (``tools/list``, catalog rules; :attr:`tools` stays:
        :meth:`refresh_tools` replaces it): every page within ``max_catalog_pages``
        and one ``timeout_ms``, as a tuple; with ``cursor=``, that page as a
        :class:`Page` (``None``: the first). From the cache while ``ttlMs`` allows."""
        return _list(self, "tools", cursor, timeout_ms, meta, cancel)

    def refresh_tools(
        self, *, timeout_ms: int | None = None, meta: _Meta = None, cancel: _Cancel = None
    ) -> tuple[Tool, ...]:
        """Walk ``tools/list`` again under every catalog rule and swap the new
        snapshot in at once; return it. On failure raise, keep the old one.
        ``timeout_ms`` bounds each page (default ``handshake_timeout_ms``)."""
        return _refresh.refresh_tools(_core_for(self, cancel), timeout_ms, meta)

    # ------------------------------------------------------------ resources, prompts, completion
    # _resources and _handlers are imported by the first call that needs them:
    # their value types cost `import mcp_sync` about 25 ms to define.

    @overload
    def list_resources(self, *, timeout_ms: int | None = None, meta: _Meta = None,
                       cancel: _Cancel = None) -> tuple[Resource, ...]: ...  # fmt: skip
    @overload
    def list_resources(
        self, *, cursor: str | None, timeout_ms: int | None = None, meta: _Meta = None, cancel: _Cancel = None
    ) -> Page[Resource]: ...
    def list_resources(self, *, cursor: Any = WHOLE_LIST, timeout_ms: int | None = None, meta: _Meta = None,
                       cancel: _Cancel = None) -> Any:  # fmt: skip
        """Every resource the server lists (all pages, in its order, within one
        ``timeout_ms``); with ``cursor=``, one page (see :meth:`list_tools`)."""
        return _list(self, "resources", cursor, timeout_ms, meta, cancel)

    @overload
    def list_resource_templates(
        self, *, timeout_ms: int | None = None, meta: _Meta = None, cancel: _Cancel = None
    ) -> tuple[ResourceTemplate, ...]: ...
    @overload
    def list_resource_templates(
        self, *, cursor: str | None, timeout_ms: int | None = None, meta: _Meta = None, cancel: _Cancel = None
    ) -> Page[ResourceTemplate]: ...
    def list_resource_templates(
        self, *, cursor: Any = WHOLE_LIST, timeout_ms: int | None = None, meta: _Meta = None, cancel: _Cancel = None
    ) -> Any:
        """Every resource template the server lists (all pages); with ``cursor=``, one page."""
        return _list(self, "resource_templates", cursor, timeout_ms, meta, cancel)

    def read_resource(
        self, uri: str, *, timeout_ms: int | None = None, meta: _Meta = None, cancel: _Cancel = None
    ) -> ReadResourceResult:
        """Read one resource: text and/or binary (decoded) contents. ``meta``
        adds keys to the request's ``_meta`` (the library's own win)."""
        from . import resources as _resources

        return _resources.read_resource(_core_for(self, cancel), uri, timeout_ms, meta)

    @property
    def resources_changed(self) -> bool:
        """Whether the server said its resource list changed since the last
        :meth:`list_resources` began."""
        return self._core.inbound.changed["resources"].is_set()

    @overload
    def list_prompts(self, *, timeout_ms: int | None = None, meta: _Meta = None,
                     cancel: _Cancel = None) -> tuple[Prompt, ...]: ...  # fmt: skip
    @overload
    def list_prompts(
        self, *, cursor: str | None, timeout_ms: int | None = None, meta: _Meta = None, cancel: _Cancel = None
    ) -> Page[Prompt]: ...
    def list_prompts(self, *, cursor: Any = WHOLE_LIST, timeout_ms: int | None = None, meta: _Meta = None,
                     cancel: _Cancel = None) -> Any:  # fmt: skip
        """Every prompt the server lists (all pages); with ``cursor=``, one page."""
        return _list(self, "prompts", cursor, timeout_ms, meta, cancel)

    def get_prompt(self, name: str, arguments: Mapping[str, str] | None = None, *,
                   timeout_ms: int | None = None, meta: _Meta = None, cancel: _Cancel = None) -> GetPromptResult:
        """Get one prompt, filled in with ``arguments`` (strings). ``meta``
        adds keys to the request's ``_meta`` (the library's own win)."""
        from . import resources as _resources

        return _resources.get_prompt(_core_for(self, cancel), name, arguments, timeout_ms, meta)

    @property
    def prompts_changed(self) -> bool:
        """Whether the server said its prompt list changed since the last
        :meth:`list_prompts` began."""
        return self._core.inbound.changed["prompts"].is_set()

    def complete(
        self,
        ref: Prompt | ResourceTemplate | Mapping[str, str],
        argument: Mapping[str, str],
        *,
        context: Mapping[str, str] | None = None,
        timeout_ms: int | None = None,
        meta: _Meta = None,
        cancel: _Cancel = None,
    ) -> Completion:
        """Ask for completions of one argument of a prompt or a resource
        template: ``argument`` is ``{"name": ..., "value": ...}``, ``context``
        the arguments already resolved."""
        from . import resources as _resources

        return _resources.complete(_core_for(self, cancel), ref, argument, context, timeout_ms, meta=meta)

    def pages(
        self, kind: str, *, cursor: str | None = None, timeout_ms: int | None = None, meta: _Meta = None,
        cancel: _Cancel = None,
    ) -> Iterator[Page[Any]]:  # fmt: skip
        """The pages of ``kind`` (``"tools"``, ``"resources"``, ``"resource_templates"``,
        ``"prompts"``) from ``cursor`` on, each asked for as you iterate, at most
        ``max_catalog_pages``; a repeated cursor or one more page: :class:`InvalidResponse`."""
        from .paging import pages

        return pages(_core_for(self, cancel), kind, cursor, timeout_ms, meta)

    # ------------------------------------------------------------ skills (io.modelcontextprotocol/skills)
    # mcp_sync.skills is imported by the first call, never by `import mcp_sync`.

    def list_skills(
        self, *, timeout_ms: int | None = None, meta: _Meta = None, cancel: _Cancel = None
    ) -> tuple[Skill, ...]:
        """Every skill the server lists (``skills/list``, all pages, within
        ``timeout_ms``): each entry's frontmatter and file manifest. No file
        is read. :class:`NotSupported` unless the server declared the skills
        extension."""
        from . import skills

        return skills.list_skills(_core_for(self, cancel), timeout_ms, meta)

    def get_skill(
        self, uri: str, *, timeout_ms: int | None = None, meta: _Meta = None, cancel: _Cancel = None
    ) -> Skill:
        """The entry of one skill, by the URI of its ``SKILL.md``
        (``skills/get``), listed or not. No file is read."""
        from . import skills

        return skills.get_skill(_core_for(self, cancel), uri, timeout_ms, meta)

    def load_skill(
        self, skill: Skill | str, *, timeout_ms: int | None = None, allow_dynamic: bool = False,
        meta: _Meta = None, cancel: _Cancel = None,
    ) -> SkillFile:  # fmt: skip
        """Read a skill's ``SKILL.md`` and check it against the entry (size,
        digest, frontmatter field by field); a URI is looked up with
        :meth:`get_skill` first. A mismatch raises a
        ``skills.SkillVerificationError`` subclass and nothing is returned.
        ``allow_dynamic=True`` reads a skill that publishes no digests."""
        from . import skills

        return skills.load_skill(_core_for(self, cancel), skill, timeout_ms, allow_dynamic, meta)

    def read_skill_file(
        self, skill: Skill, path: str, *, timeout_ms: int | None = None, allow_dynamic: bool = False,
        meta: _Meta = None, cancel: _Cancel = None,
    ) -> SkillFile:  # fmt: skip
        """Read one file of ``skill`` (a path relative to its root, or a
        URI) and check its size and digest against the entry; a file the
        entry does not list is refused before anything is sent."""
        from . import skills

        return skills.read_skill_file(_core_for(self, cancel), skill, path, timeout_ms, allow_dynamic, meta)

    # ------------------------------------------------------------ logging, roots, health

    def set_log_level(self, level: str, *, timeout_ms: int | None = None, cancel: _Cancel = None) -> None:
        """Ask the server to send log messages of ``level`` and above
        (``"debug"`` ... ``"emergency"``) with ``logging/setLevel``."""
        _serverlog.set_log_level(_core_for(self, cancel), level, timeout_ms)

    def set_roots(self, roots: RootsProvider) -> None:
        """Replace the roots given to ``Handlers(roots=...)`` and tell the
        server (``notifications/roots/list_changed``)."""
        from . import handlers as _handlers

        _handlers.set_roots(self._core, roots)

    def roots_changed(self) -> None:
        """Tell the server the roots changed (say, what a roots callable
        returns), so it asks again."""
        from . import handlers as _handlers

        _handlers.roots_changed(self._core)

    def ping(self, *, timeout_ms: int | None = None, cancel: _Cancel = None) -> None:
        """Check that the server answers, within ``timeout_ms`` (default
        ``request_timeout_ms``): ``ping`` in the handshake era, its cheap
        equivalent where the era has no ``ping``. Raises :class:`Timeout` if it
        does not answer in time, :class:`RemoteError` if it answers with an
        error (it is alive, but does not implement the probe).
        """
        _health.probe(_core_for(self, cancel), timeout_ms)

    # ------------------------------------------------------------ instructions, subscriptions, extensions

    @property
    def instructions(self) -> str | None:
        """What the server asks a model to know about using it (its
        ``instructions``; untrusted text, at most ``max_tool_document_bytes``
        UTF-8 bytes), or ``None``. ``model_tools.instructions`` puts it in a
        system prompt."""
        return self.server_info.instructions

    def subscribe_resource(
        self, uri: str, on_update: Callable[[str], None], *, timeout_ms: int | None = None
    ) -> None:
        """Call ``on_update(uri)`` each time the server says the resource
        changed (read it again). Handshake era: ``resources/subscribe``;
        2026-07-28: the ``subscriptions/listen`` stream, returning once the
        server acknowledged it. ``on_update`` runs on a library thread, never
        the reader's; one that raises is logged. Subscribing again replaces
        the callback. :class:`NotSupported` unless the server declared
        ``resources.subscribe``."""
        from .listen import subscribe_resource

        subscribe_resource(self._core, uri, on_update, timeout_ms)

    def unsubscribe_resource(self, uri: str, *, timeout_ms: int | None = None) -> None:
        """Stop the updates of ``uri`` (its callback is forgotten at once);
        nothing happens if it was not subscribed."""
        from .listen import unsubscribe_resource

        unsubscribe_resource(self._core, uri, timeout_ms)

    def request(
        self, method: str, params: Mapping[str, Any] | None = None, *, timeout_ms: int | None = None,
        cancel: _Cancel = None,
    ) -> dict[str, Any]:  # fmt: skip
        """Send a request of a method this library does not know (an
        extension's) and return its result object, under the same deadline
        (``timeout_ms``, default ``request_timeout_ms``), bounds and errors as
        every built-in call; in 2026-07-28 it carries the protocol's
        ``_meta``. A method the library sends itself is refused
        (:class:`InvalidOption`, naming the call to use)."""
        from .extensions import custom_request

        return custom_request(_core_for(self, cancel), method, params, timeout_ms)

    def notify(self, method: str, params: Mapping[str, Any] | None = None) -> None:
        """Send a notification this library does not know (``notifications/...``).
        :class:`NotSupported` over 2026-07-28 Streamable HTTP, which has no
        client notifications."""
        from .extensions import custom_notify

        custom_notify(self._core, method, params)

    # ------------------------------------------------------------ ending

    def close(self) -> None:
        """End the session and tear the server down. Idempotent, thread-safe."""
        self._core.close()
        self._finalizer.detach()

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self.closed else "open"
        return f"<Session server={self.server!r} tools={len(self.tools)} {state}>"

    _repr_mimebundle_ = _session_bundle  # Jupyter's display
    _display_facts = _session_facts  # what a notebook shows of it

def _core_for(session: Session, cancel: CancelToken | None) -> CallingCore:
    """The session's core, or, for a call with ``cancel``, a view of it whose
    every wait ends when the token fires (``session.cancel.Guarded``)."""
    core = session._core
    return core if cancel is None else _cancel.guarded(core, cancel)


def _list(  # noqa: PLR0917
    session: Session, kind: str, cursor: Any, timeout_ms: int | None, meta: _Meta, cancel: _Cancel
) -> Any:
    """The ``list_*`` methods: a whole list, or one page with ``cursor``."""
    from .paging import listing

    return listing(_core_for(session, cancel), kind, cursor, timeout_ms, meta)


def _logged_call(  # noqa: PLR0917
    core: _Core,
    name: str,
    arguments: Mapping[str, Any] | None,
    timeout_ms: int | None,
    traceparent: str | None,
    on_progress: ProgressCallback | None,
    progress_extends_deadline: bool,
    max_timeout_ms: int | None,
    task: bool | None,
    meta: Mapping[str, Any] | None,
) -> CallToolResult:
    # Session.call_tool with mcp_sync.calls' DEBUG records. (A function of its
    # own: in call_tool, the lambda would make a cell for each name it closes
    # over on every call, logged or not.)
    return _log.logged_call(
        core.server,
        lambda: session_call(
            core, core.inbound.progress, name, arguments, timeout_ms, traceparent, meta,
            on_progress, progress_extends_deadline, max_timeout_ms, task,
        ),
        name,
        timeout_ms,
        traceparent,
    )  # fmt: skip
