"""The authorization-code flow with PKCE, for people at a keyboard.

The flow: discovery (``_discovery``), a client identity (pre-registered, a
Client ID Metadata Document URL where the authorization server supports
them, else dynamic registration), an authorization URL with PKCE (S256
only), ``state`` and the ``resource`` indicator; a person logs in; the
redirect comes back (to the one-shot loopback listener, or through a
caller-supplied ``redirect_handler``) and is checked (``state``, ``iss``,
error); the code is exchanged for tokens.

Where the person is depends on the caller: a script or a notebook logs in
during ``connect`` (or with :meth:`AuthorizationCode.login`); a web
application sends its user through :meth:`~AuthorizationCode.begin_login`
and :meth:`~AuthorizationCode.complete_login` across two requests.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import hmac
import json
import os
import re
import secrets
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import parse_qs, urlencode, urlsplit

from ..protocol.errors import AuthError, LoginRequired, McpError, ProtocolError, Timeout
from ..protocol.limits import DEFAULT_MAX_FRAME_BYTES, check_limit, seconds
from ..protocol.redaction import Redacted
from ..protocol.text import escape
from ._base import Auth, DpopSetting, check_auth_method
from ._discovery import Challenge, Context, ServerMetadata, discover, parse_challenges
from ._dpop import DpopKey
from ._fetch import Fetcher
from ._grant import Grant, Run, check_credential_destination, select_scope
from ._loopback import LoopbackListener, free_loopback_uri
from ._store import TokenStore
from ._tokens import ClientAuth, TokenSet, choose_method, oauth_failure, refusal, token_request
from ._urls import is_loopback, same_origin

if TYPE_CHECKING:
    import httpx

__all__ = ["AuthorizationCode", "PendingLogin"]

DEFAULT_LOGIN_TIMEOUT_MS = 300_000
DEFAULT_EXCHANGE_TIMEOUT_MS = 30_000
_VISIBLE = re.compile(r"[\x21-\x7e]+\Z")
_METHODS = ("none", "client_secret_basic", "client_secret_post")


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


@dataclass(frozen=True)
class PendingLogin:
    """A login under way: the URL to send the person to, and what checking
    the redirect needs. Secret (it holds the PKCE verifier): keep
    :meth:`to_json` server-side only, e.g. in a server-side web session."""

    authorization_url: str
    """Where to send the person's browser."""
    redirect_uri: str
    server_url: str
    resource: str
    issuer: str
    token_endpoint: str
    iss_required: bool
    client_id: str
    client_method: str
    scope: str | None
    dpop: bool
    state: Redacted[str]
    verifier: Redacted[str]
    client_secret: Redacted[str] | None = None

    def __repr__(self) -> str:
        return f"PendingLogin(server_url={self.server_url!r}, issuer={self.issuer!r})"

    def to_json(self) -> str:
        """The pending login as JSON (secret: store it server-side only)."""
        return json.dumps(
            {
                "authorization_url": self.authorization_url,
                "redirect_uri": self.redirect_uri,
                "server_url": self.server_url,
                "resource": self.resource,
                "issuer": self.issuer,
                "token_endpoint": self.token_endpoint,
                "iss_required": self.iss_required,
                "client_id": self.client_id,
                "client_method": self.client_method,
                "scope": self.scope,
                "dpop": self.dpop,
                "state": self.state.reveal(),
                "verifier": self.verifier.reveal(),
                "client_secret": None if self.client_secret is None else self.client_secret.reveal(),
            }
        )

    @classmethod
    def from_json(cls, text: str) -> PendingLogin:
        try:
            data = json.loads(text)
            secret = data.get("client_secret")
            pending = cls(
                authorization_url=str(data["authorization_url"]),
                redirect_uri=str(data["redirect_uri"]),
                server_url=str(data["server_url"]),
                resource=str(data["resource"]),
                issuer=str(data["issuer"]),
                token_endpoint=str(data["token_endpoint"]),
                iss_required=bool(data["iss_required"]),
                client_id=str(data["client_id"]),
                client_method=str(data["client_method"]),
                scope=None if data.get("scope") is None else str(data["scope"]),
                dpop=bool(data["dpop"]),
                state=Redacted(str(data["state"])),
                verifier=Redacted(str(data["verifier"])),
                client_secret=None if secret is None else Redacted(str(secret)),
            )
        except (ValueError, KeyError, TypeError, AttributeError):
            raise ProtocolError("not a pending login (PendingLogin.to_json output)") from None
        if pending.client_method not in _METHODS:
            raise ProtocolError("not a pending login (PendingLogin.to_json output)")
        return pending

    def client(self) -> ClientAuth:
        return ClientAuth(self.client_id, self.client_method, self.client_secret)

    def context(self) -> Context:
        return Context(
            self.server_url,
            self.resource,
            ServerMetadata(issuer=self.issuer, token_endpoint=self.token_endpoint),
            None,
        )


def _headless() -> bool:
    """No graphical session where ``webbrowser`` would start a console browser
    in the foreground instead (lynx, w3m...)."""
    if sys.platform.startswith(("linux", "freebsd", "openbsd", "netbsd")):
        return not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))
    return False


def default_browser(url: str) -> bool:
    if _headless():
        return False
    import webbrowser

    try:
        return webbrowser.open(url)
    except Exception:  # no usable browser
        return False


class AuthorizationCode(Auth):
    """OAuth 2.1 authorization code with PKCE: a person logs in in a browser.

    With no ``redirect_handler``, a one-shot listener on ``redirect_uri``
    (default ``http://127.0.0.1:<free port>/callback``) receives the redirect,
    and ``browser(url)`` is asked to open the authorization URL (default: the
    system browser where there is a display); when it cannot, the URL is
    printed to stderr. With ``redirect_handler(url) -> redirect URL`` the
    caller shows the URL and returns where the browser was sent (a notebook
    can ``input()`` it).

    Client identity, in order: ``client_id`` (and ``client_secret``, sent
    as ``token_endpoint_auth_method`` says when given) when pre-registered;
    ``client_metadata_url`` (a Client ID Metadata Document)
    when the authorization server supports them; dynamic registration as
    ``client_name``, remembered in the store.

    During :func:`mcp_sync.connect` a needed login runs on the caller's
    thread, bounded by ``login_timeout_ms``; later (a scope step-up) it runs
    inside the request that needed it. With ``interactive=False`` no login is
    ever started for you: :class:`mcp_sync.LoginRequired` is raised instead
    (web applications, which use :meth:`begin_login`/:meth:`complete_login`).

    When the authorization server lists ``offline_access``, it is requested
    (for a refresh token) together with ``prompt=consent``, which OpenID
    Connect providers require before they honour it.
    """

    interactive = True

    def __init__(
        self,
        *,
        client_name: str = "mcp-sync",
        client_id: str | None = None,
        client_secret: str | None = None,
        client_metadata_url: str | None = None,
        redirect_uri: str | None = None,
        redirect_handler: Callable[[str], str] | None = None,
        browser: Callable[[str], object] | None = None,
        interactive: bool = True,
        login_timeout_ms: int = DEFAULT_LOGIN_TIMEOUT_MS,
        application_type: str | None = None,
        scope: str | None = None,
        store: TokenStore | None = None,
        dpop: DpopSetting = "auto",
        issuer: str | None = None,
        token_endpoint_auth_method: str | None = None,
        any_issuer: bool = False,
    ) -> None:
        super().__init__(scope=scope, store=store, dpop=dpop, issuer=issuer, any_issuer=any_issuer)
        if not isinstance(client_name, str) or not client_name.strip():
            raise ProtocolError("option client_name must be a non-empty string")
        self.client_name = client_name
        _check_client_credentials(client_id, client_secret)
        self.client_id = client_id
        self._client_secret = None if client_secret is None else Redacted(client_secret)
        if token_endpoint_auth_method == "private_key_jwt":
            raise ProtocolError(
                "option token_endpoint_auth_method: AuthorizationCode authenticates with "
                "client_secret_basic or client_secret_post"
            )
        self.token_endpoint_auth_method = check_auth_method(
            token_endpoint_auth_method, secret=client_secret is not None
        )
        self.client_metadata_url = _checked_metadata_url(client_metadata_url)
        self.redirect_uri = _checked_redirect_uri(redirect_uri)
        self.redirect_handler = _checked_callable("redirect_handler", redirect_handler)
        browser = _checked_callable("browser", browser)
        self.browser = browser if browser is not None else default_browser
        self.can_login = bool(interactive)
        self.login_timeout_ms = check_limit("login_timeout_ms", login_timeout_ms)
        if application_type not in (None, "native", "web"):
            raise ProtocolError('option application_type must be "native" or "web"')
        self.application_type = application_type

    # ----------------------------------------------------------- public

    def login(
        self,
        url: str,
        *,
        server: str = "mcp",
        http_client: httpx.Client | None = None,
        timeout_ms: int | None = None,
    ) -> None:
        """Log in for the server at ``url`` now, on this thread: discovery,
        registration if needed, the browser step, the code exchange. Every
        wait is bounded by ``timeout_ms`` (default ``login_timeout_ms``)."""
        timeout = seconds(check_limit("timeout_ms", timeout_ms or self.login_timeout_ms))
        deadline = time.monotonic() + timeout
        with _fetcher(server, http_client) as fetcher:
            grant = self._grant(url)
            if not grant.lock.acquire(timeout=min(timeout, threading.TIMEOUT_MAX)):
                raise Timeout(f"server {server!r}: waiting for another login missed the deadline")
            try:
                grant.load()
                ctx = grant.ctx
                challenge = ctx.challenge if ctx is not None else _probe(fetcher, url, deadline)
                grant.acquire(
                    fetcher, challenge, deadline, inline_login=True, rediscover=ctx is None
                )
            finally:
                grant.lock.release()

    def begin_login(
        self,
        url: str,
        *,
        server: str = "mcp",
        http_client: httpx.Client | None = None,
        timeout_ms: int = DEFAULT_EXCHANGE_TIMEOUT_MS,
    ) -> PendingLogin:
        """Start a login for a person elsewhere (a web application's user):
        discovery and registration now; send the browser to
        ``pending.authorization_url`` and later call :meth:`complete_login`
        with the URL it was redirected to. ``redirect_uri`` must be set to
        your application's callback."""
        if self.redirect_uri is None:
            raise ProtocolError("begin_login needs the option redirect_uri (your callback URL)")
        deadline = time.monotonic() + seconds(check_limit("timeout_ms", timeout_ms))
        with _fetcher(server, http_client) as fetcher:
            grant = self._grant(url)
            with grant.lock:
                grant.load()
                challenge = _probe(fetcher, url, deadline)
                ctx = discover(
                    fetcher, url, challenge, deadline, issuer=self.issuer,
                    issuer_used=self.issuer is not None and grant.issuer == self.issuer,
                )  # fmt: skip
                grant.ctx = ctx
                grant.switch_issuer(ctx.issuer)
                run = Run(fetcher, ctx, grant, deadline, inline_login=True)
                scope = self._with_offline_access(select_scope(self.scope, challenge, ctx), ctx)
                if grant.use_dpop(ctx) and grant.dpop is None:
                    grant.dpop = DpopKey()
                client = self._client(run, scope)
                pending = self._begin(run, client, scope)
                grant.save()
                return pending

    def complete_login(
        self,
        pending: PendingLogin,
        redirect_url: str,
        *,
        server: str = "mcp",
        http_client: httpx.Client | None = None,
        timeout_ms: int = DEFAULT_EXCHANGE_TIMEOUT_MS,
    ) -> None:
        """Finish a login :meth:`begin_login` started: check the redirect
        (``state``, ``iss``, error) and exchange its code for tokens, which go
        to the store."""
        deadline = time.monotonic() + seconds(check_limit("timeout_ms", timeout_ms))
        with _fetcher(server, http_client) as fetcher:
            grant = self._grant(pending.server_url)
            with grant.lock:
                grant.load()
                grant.switch_issuer(pending.issuer)
                if pending.dpop and grant.dpop is None:
                    raise AuthError(
                        f"server {server!r}: the DPoP key of this pending login is not in the store"
                    )
                ctx = pending.context()
                run = Run(fetcher, ctx, grant, deadline, inline_login=True)
                token = self._finish(run, pending, redirect_url)
                grant.adopt(token, ctx, pending.scope)

    # ----------------------------------------------------------- the flow

    def _acquire(self, run: Run, scope: str | None) -> TokenSet:
        scope = self._with_offline_access(scope, run.ctx)
        client = self._client(run, scope)
        if not run.inline_login or not self.can_login:
            raise LoginRequired(f"server {run.server!r} needs a login in a browser")
        pending = self._begin(run, client, scope)
        deadline = min(run.deadline, time.monotonic() + seconds(self.login_timeout_ms))
        redirect = self._user_step(pending, deadline, run.fetcher.stopping, run.server)
        return self._finish(run, pending, redirect)

    def _with_offline_access(self, scope: str | None, ctx: Context) -> str | None:
        supported = ctx.server.scopes_supported or ()
        if scope is not None and "offline_access" in supported and "offline_access" not in scope.split():
            return scope + " offline_access"
        return scope

    def _redirect_for(self, grant: Grant) -> str:
        if self.redirect_uri is not None:
            return self.redirect_uri
        stored = grant.extra.get("client")
        if isinstance(stored, dict) and isinstance(stored.get("redirect_uri"), str):
            return str(stored["redirect_uri"])
        remembered = grant.extra.get("redirect_uri")
        if isinstance(remembered, str):
            return remembered
        uri = free_loopback_uri()
        grant.extra["redirect_uri"] = uri
        return uri

    def _client(self, run: Run, scope: str | None) -> ClientAuth:
        meta = run.ctx.server
        server = run.server
        if self.client_id is not None:
            if self._client_secret is not None:
                check_credential_destination(run, "the client secret")
            method = choose_method(
                self._client_secret is not None,
                meta.token_endpoint_auth_methods_supported,
                server,
                self.token_endpoint_auth_method,
            )
            return ClientAuth(self.client_id, method, self._client_secret)
        stored = run.grant.extra.get("client")
        if isinstance(stored, dict):
            client = _stored_client(stored)
            if client is not None:
                return client
        if self.client_metadata_url is not None and meta.client_id_metadata_document_supported:
            return ClientAuth(self.client_metadata_url, "none")
        if meta.registration_endpoint is None:
            raise AuthError(
                f"server {server!r}: its authorization server supports neither dynamic client "
                "registration nor (for this client) a client ID metadata document; give client_id"
            )
        return self._register(run, meta)

    def _register(self, run: Run, meta: ServerMetadata) -> ClientAuth:
        """Dynamic client registration (RFC 7591)."""
        server = run.server
        supported = meta.token_endpoint_auth_methods_supported
        preferred = "none" if supported is None or "none" in supported else choose_method(True, supported, server)
        redirect_uri = self._redirect_for(run.grant)
        application_type = self.application_type or (
            "native" if is_loopback(urlsplit(redirect_uri).hostname) else "web"
        )
        body = {
            "client_name": self.client_name,
            "redirect_uris": [redirect_uri],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": preferred,
            "application_type": application_type,
        }
        assert meta.registration_endpoint is not None
        reply = run.fetcher.request(
            "POST", meta.registration_endpoint, run.deadline, what="client registration", json_body=body
        )
        doc = reply.body
        if reply.status not in (200, 201) or not isinstance(doc, dict):
            raise oauth_failure(reply, server, "client registration")
        client_id, secret, method = _registered_client(doc, preferred, server)
        expires = doc.get("client_secret_expires_at")
        record = {
            "client_id": client_id,
            "client_secret": secret,
            "method": method,
            "redirect_uri": redirect_uri,
            "expires_at": expires if isinstance(expires, int) and not isinstance(expires, bool) else 0,
        }
        run.grant.extra["client"] = record
        run.grant.save()
        return ClientAuth(client_id, method, None if secret is None else Redacted(secret))

    def _begin(self, run: Run, client: ClientAuth, scope: str | None) -> PendingLogin:
        meta = run.ctx.server
        server = run.server
        if meta.authorization_endpoint is None:
            raise AuthError(f"server {server!r}: its authorization server has no authorization endpoint")
        if meta.found and "S256" not in (meta.code_challenge_methods_supported or ()):
            raise AuthError(
                f"server {server!r}: its authorization server does not advertise PKCE with S256; "
                "refusing to start a login"
            )
        verifier = secrets.token_urlsafe(48)
        state = secrets.token_urlsafe(24)
        redirect_uri = self._redirect_for(run.grant)
        query = {
            "response_type": "code",
            "client_id": client.client_id,
            "redirect_uri": redirect_uri,
            "code_challenge": _b64url(hashlib.sha256(verifier.encode("ascii")).digest()),
            "code_challenge_method": "S256",
            "state": state,
            "resource": run.ctx.resource,
        }
        if scope:
            query["scope"] = scope
            if "offline_access" in scope.split():
                # OpenID Connect Core §11: without it a provider ignores offline_access.
                query["prompt"] = "consent"
        endpoint = meta.authorization_endpoint
        joiner = "&" if urlsplit(endpoint).query else "?"
        return PendingLogin(
            authorization_url=endpoint + joiner + urlencode(query),
            redirect_uri=redirect_uri,
            server_url=run.ctx.server_url,
            resource=run.ctx.resource,
            issuer=meta.issuer,
            token_endpoint=meta.token_endpoint,
            iss_required=meta.authorization_response_iss_parameter_supported,
            client_id=client.client_id,
            client_method=client.method,
            scope=scope,
            dpop=run.grant.dpop is not None,
            state=Redacted(state),
            verifier=Redacted(verifier),
            client_secret=client.secret,
        )

    def _user_step(
        self, pending: PendingLogin, deadline: float, cancel: threading.Event | None, server: str
    ) -> str:
        url = pending.authorization_url
        if self.redirect_handler is not None:
            try:
                redirect = self.redirect_handler(url)
            except McpError:
                raise
            except Exception as exc:
                raise AuthError(f"the redirect_handler raised {type(exc).__name__}") from None
            if not isinstance(redirect, str):
                raise AuthError("the redirect_handler returned something other than a URL string")
            return redirect.strip()
        with LoopbackListener(pending.redirect_uri) as listener:
            self._show(url, server)
            return listener.wait(deadline, cancel)

    def _show(self, url: str, server: str) -> None:
        opened: object = False
        try:
            opened = self.browser(url)
        except Exception:  # a browser that cannot start: print instead
            opened = False
        if opened is False or opened is None:
            print(
                f"mcp-sync: to authorize access to server {server!r}, open this URL in a browser:\n{escape(url)}",
                file=sys.stderr,
                flush=True,
            )

    def _finish(self, run: Run, pending: PendingLogin, redirect_url: str) -> TokenSet:
        code = _check_redirect(pending, redirect_url, run.server)
        form = {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": pending.redirect_uri,
            "code_verifier": pending.verifier.reveal(),
            "resource": pending.resource,
        }
        key = run.grant.dpop if pending.dpop else None
        endpoint = pending.token_endpoint
        return token_request(
            run.fetcher,
            endpoint,
            form,
            pending.client(),
            run.deadline,
            audience=pending.issuer,
            what="the authorization code exchange",
            proof=(lambda nonce: key.proof("POST", endpoint, nonce=nonce)) if key is not None else None,
        )

    def _refresh_client(self, grant: Grant) -> ClientAuth | None:
        if self.client_id is not None:
            ctx = grant.ctx
            supported = ctx.server.token_endpoint_auth_methods_supported if ctx is not None else None
            method = choose_method(
                self._client_secret is not None, supported, "(refresh)", self.token_endpoint_auth_method
            )
            return ClientAuth(self.client_id, method, self._client_secret)
        stored = grant.extra.get("client")
        if isinstance(stored, dict):
            return _stored_client(stored)
        if self.client_metadata_url is not None:
            return ClientAuth(self.client_metadata_url, "none")
        return None


# ------------------------------------------------------------- options


def _check_client_credentials(client_id: str | None, client_secret: str | None) -> None:
    if client_id is not None and (not isinstance(client_id, str) or not _VISIBLE.match(client_id)):
        raise ProtocolError("option client_id must be a non-empty visible-ASCII string")
    if client_secret is not None:
        if client_id is None:
            raise ProtocolError("option client_secret needs client_id")
        if not isinstance(client_secret, str) or not client_secret:
            raise ProtocolError("option client_secret must be a non-empty string")


def _checked_metadata_url(url: str | None) -> str | None:
    if url is not None and (
        not isinstance(url, str) or not url.startswith("https://") or urlsplit(url).path in ("", "/")
    ):
        raise ProtocolError("option client_metadata_url must be an https URL with a path")
    return url


def _checked_redirect_uri(uri: str | None) -> str | None:
    if uri is not None and (
        not isinstance(uri, str)
        or urlsplit(uri).scheme not in ("http", "https")
        or not urlsplit(uri).hostname
        or urlsplit(uri).fragment
    ):
        raise ProtocolError("option redirect_uri must be an absolute http(s) URL without a fragment")
    return uri


_Callback = TypeVar("_Callback", bound=Callable[..., object])


def _checked_callable(name: str, value: _Callback | None) -> _Callback | None:
    if value is not None and not callable(value):
        raise ProtocolError(f"option {name} must be callable")
    return value


def _registered_client(doc: dict[str, Any], preferred: str, server: str) -> tuple[str, str | None, str]:
    """The client id, secret and authentication method of a registration reply, checked."""
    client_id = doc.get("client_id")
    if not isinstance(client_id, str) or not _VISIBLE.match(client_id) or len(client_id) > 1024:
        raise AuthError(f"server {server!r}: client registration returned no usable client_id")
    secret = doc.get("client_secret")
    if secret is not None and (not isinstance(secret, str) or not _VISIBLE.match(secret)):
        raise AuthError(f"server {server!r}: client registration returned an unusable client_secret")
    method = doc.get("token_endpoint_auth_method")
    if method is None:
        # Not echoed back: the method asked for stands.
        method = preferred
    if method == "none":
        secret = None
    if method not in _METHODS:
        raise AuthError(
            f"server {server!r}: client registration chose a client authentication method "
            "this client does not implement"
        )
    if method != "none" and secret is None:
        raise AuthError(f"server {server!r}: client registration returned no client_secret")
    return client_id, secret, method


def _stored_client(record: dict[str, Any]) -> ClientAuth | None:
    client_id = record.get("client_id")
    method = record.get("method")
    secret = record.get("client_secret")
    expires = record.get("expires_at")
    if not isinstance(client_id, str) or method not in _METHODS:
        return None
    if isinstance(expires, int) and expires and expires <= time.time() + 60:
        return None  # the secret expires: register again
    if method != "none" and not isinstance(secret, str):
        return None
    return ClientAuth(client_id, method, Redacted(secret) if isinstance(secret, str) else None)


def _check_redirect(pending: PendingLogin, redirect_url: str, server: str) -> str:
    """The code from a redirect that answers this login, or :class:`AuthError`."""
    try:
        got = urlsplit(redirect_url)
        want = urlsplit(pending.redirect_uri)
        same = same_origin(redirect_url, pending.redirect_uri) and got.path == want.path
    except ValueError:
        same = False
    if not same:
        raise AuthError(f"server {server!r}: the redirect does not come back to the redirect_uri")
    params = parse_qs(got.query, keep_blank_values=True)
    if any(len(values) != 1 for values in params.values()):
        raise AuthError(f"server {server!r}: the redirect repeats a parameter")
    value = {name: values[0] for name, values in params.items()}
    state = value.get("state", "")
    if not hmac.compare_digest(state.encode(), pending.state.reveal().encode()):
        raise AuthError(f"server {server!r}: the redirect's state does not match this login")
    iss = value.get("iss")
    if iss is not None and iss != pending.issuer:
        raise AuthError(
            f"server {server!r}: the redirect names another authorization server as its issuer "
            "(RFC 9207); refusing its code"
        )
    if iss is None and pending.iss_required:
        raise AuthError(
            f"server {server!r}: the redirect lacks the iss parameter its authorization server "
            "promised (RFC 9207); refusing its code"
        )
    error = value.get("error")
    if error is not None:
        description = value.get("error_description")
        message, _ = refusal(server, "the authorization was refused", error, description)
        raise AuthError(message, error, Redacted({"error": error, "error_description": description}))
    code = value.get("code", "")
    if not code or not _VISIBLE.match(code):
        raise AuthError(f"server {server!r}: the redirect carries no authorization code")
    return code


def _probe(fetcher: Fetcher, url: str, deadline: float) -> Challenge:
    """Ask the server once without credentials, for its challenge."""
    reply = fetcher.request(
        "POST",
        url,
        deadline,
        what="the unauthenticated probe",
        json_body={"jsonrpc": "2.0", "id": "mcp_sync-probe", "method": "ping"},
        headers={"Accept": "application/json, text/event-stream"},
    )
    if reply.status in (401, 403):
        return parse_challenges(reply.headers.get_list("www-authenticate"))
    return Challenge()


@contextlib.contextmanager
def _fetcher(server: str, http_client: httpx.Client | None) -> Iterator[Fetcher]:
    from ..transports.http_options import import_httpx as _import_httpx

    hx = _import_httpx()
    if http_client is not None and not isinstance(http_client, hx.Client):
        raise ProtocolError("option http_client must be an httpx.Client")
    own = http_client is None
    client: httpx.Client = (
        hx.Client(trust_env=True, follow_redirects=False) if http_client is None else http_client
    )
    try:
        yield Fetcher(client, server=server, max_bytes=DEFAULT_MAX_FRAME_BYTES)
    finally:
        if own:
            client.close()
