"""One server's grant, and the hook the HTTP transport calls.

A :class:`Grant` holds what an auth object has for one server URL: the
discovery context, the current token (and its DPoP key), and the client the
authorization server knows. Its lock is the one place where tokens change:
one refresh or re-authorization at a time, however many threads call; the
others wait (at most until their own deadlines) and then use the result.

A :class:`Binding` is the small object an ``HttpTransport`` consults: it
supplies the ``Authorization`` (and ``DPoP``) headers of each request, and on a
401 or 403 decides whether a retry with new credentials is worth it.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol

from ..protocol.errors import AuthError, McpError, Timeout
from ..protocol.limits import Limits
from ..protocol.text import escape
from ._discovery import Challenge, Context, discover, parse_challenges
from ._dpop import DPOP_ALGORITHM, DpopKey
from ._fetch import Fetcher
from ._store import TokenStore
from ._tokens import ClientAuth, TokenSet, keep_refresh, token_request
from ._urls import origin, same_origin

if TYPE_CHECKING:
    import httpx

    from ..transports.http_status import Beside

__all__ = [
    "Binding",
    "Grant",
    "Run",
    "check_credential_destination",
    "select_scope",
    "union_scopes",
]


class Auth(Protocol):
    """What a grant and its bindings need of the :class:`~mcp_sync.auth.Auth`
    that made them (``_base`` builds grants, so it cannot be imported here)."""

    @property
    def interactive(self) -> bool: ...
    @property
    def scope(self) -> str | None: ...
    @property
    def store(self) -> TokenStore: ...
    @property
    def dpop(self) -> bool | Literal["auto"]: ...
    @property
    def issuer(self) -> str | None: ...
    @property
    def any_issuer(self) -> bool: ...

    def _grant(self, url: str) -> Grant: ...
    def _acquire(self, run: Run, scope: str | None) -> TokenSet: ...
    def _refresh_client(self, grant: Grant) -> ClientAuth | None: ...

MAX_STEP_UPS = 2
"""Consecutive scope step-ups (403 insufficient_scope) before giving up."""
_VISIBLE = re.compile(r"[\x21-\x7e]+\Z")


def union_scopes(first: str | None, second: str | None) -> str | None:
    """Space-separated scopes of both, in order, without repeats (SEP-2350)."""
    merged: list[str] = []
    for scope in (first or "").split() + (second or "").split():
        if scope not in merged:
            merged.append(scope)
    return " ".join(merged) or None


def select_scope(configured: str | None, challenge: Challenge, ctx: Context) -> str | None:
    """The MCP scope selection: the challenge's ``scope``, else the resource
    metadata's ``scopes_supported``, else none; a configured scope joins it."""
    if challenge.scope is not None:
        return union_scopes(configured, challenge.scope)
    if configured is not None:
        return configured
    prm = ctx.resource_metadata
    if prm is not None and prm.scopes_supported:
        return " ".join(prm.scopes_supported)
    return None


@dataclass
class Run:
    """One acquisition: where, with what, until when."""

    fetcher: Fetcher
    ctx: Context
    grant: Grant
    deadline: float
    inline_login: bool
    """False while connecting: a login that needs a person raises
    :class:`LoginRequired` so ``connect`` can run it on the caller's thread."""

    @property
    def server(self) -> str:
        return self.fetcher.server

    def dpop_proof(self) -> Any:
        """A token-request proof maker, or None when this grant does not use DPoP."""
        key = self.grant.dpop
        if key is None:
            return None
        endpoint = self.ctx.server.token_endpoint

        def proof(nonce: str | None) -> str:
            return key.proof("POST", endpoint, nonce=nonce)

        return proof

    def token(self, form: dict[str, str], client: ClientAuth | None, what: str) -> TokenSet:
        """A token request to the authorization server, with ``resource``."""
        form = {**form, "resource": self.ctx.resource}
        return token_request(
            self.fetcher,
            self.ctx.server.token_endpoint,
            form,
            client,
            self.deadline,
            audience=self.ctx.issuer,
            what=what,
            proof=self.dpop_proof(),
        )


def check_credential_destination(run: Run, what: str) -> None:
    """A credential of the caller's (a client secret, a private-key or
    workload assertion) goes only to an authorization server the caller
    meant: the one pinned with ``issuer=``, one at the MCP server's own
    origin, or (``any_issuer=True``) whichever the MCP server names. Else the
    MCP server's metadata alone could send the secret to a host of its choosing."""
    auth = run.grant.auth
    ctx = run.ctx
    if auth.any_issuer or (auth.issuer is not None and ctx.issuer == auth.issuer):
        return
    if same_origin(ctx.issuer, ctx.server_url):
        return
    raise AuthError(
        f"server {run.server!r}: its authorization server ({escape(origin(ctx.issuer))}) is on "
        f"another origin and was not named by this auth; refusing to send it {what}. Pin it "
        "with issuer= if you trust it, or pass any_issuer=True to trust whichever "
        "authorization server the MCP server names"
    )


class Grant:
    """What one auth object holds for one server URL. Every field is guarded
    by ``lock``."""

    def __init__(self, auth: Auth, url: str) -> None:
        self.auth = auth
        self.url = url
        self.lock = threading.Lock()
        self.loaded = False
        self.ctx: Context | None = None
        self.issuer: str | None = None
        self.token_endpoint: str | None = None
        self.token: TokenSet | None = None
        self.dpop: DpopKey | None = None
        self.client: ClientAuth | None = None
        self.extra: dict[str, Any] = {}
        """Grant-kind state kept in the store (a registered client)."""
        self.requested_scope: str | None = None
        self.rs_nonce: str | None = None
        self.step_ups = 0

    def __repr__(self) -> str:
        return f"<Grant url={self.url!r} token={'yes' if self.token else 'no'}>"

    # ----------------------------------------------------------- store

    def _key(self, issuer: str) -> str:
        return f"{self.url} {issuer}"

    def load(self) -> None:
        """Read the last grant for this server from the store, once."""
        if self.loaded:
            return
        self.loaded = True
        store = self.auth.store
        index = store.get(self.url)
        issuer = index.get("issuer") if index else None
        if not isinstance(issuer, str):
            return
        self.switch_issuer(issuer)

    def switch_issuer(self, issuer: str) -> None:
        """Use the record kept for ``issuer`` (or none): credentials from one
        authorization server are never shown to another (SEP-2352)."""
        if issuer == self.issuer:
            return
        self.issuer = issuer
        self.token = None
        self.dpop = None
        self.client = None
        self.extra = {}
        self.token_endpoint = None
        self.requested_scope = None
        record = self.auth.store.get(self._key(issuer)) or {}
        token = record.get("token")
        if isinstance(token, Mapping):
            self.token = TokenSet.from_record(token)
        dpop = record.get("dpop")
        if isinstance(dpop, Mapping):
            try:
                self.dpop = DpopKey(dict(dpop))
            except Exception:  # a damaged key: the token it binds is useless too
                self.dpop = None
                self.token = None
        if self.token is not None and self.token.token_type == "DPoP" and self.dpop is None:
            self.token = None
        endpoint = record.get("token_endpoint")
        self.token_endpoint = endpoint if isinstance(endpoint, str) else None
        scope = record.get("scope")
        self.requested_scope = scope if isinstance(scope, str) else None
        extra = record.get("extra")
        self.extra = dict(extra) if isinstance(extra, Mapping) else {}

    def save(self) -> None:
        if self.issuer is None:
            return
        record: dict[str, Any] = {
            "token": None if self.token is None else self.token.to_record(),
            "dpop": None if self.dpop is None else self.dpop.to_record(),
            "token_endpoint": self.token_endpoint,
            "scope": self.requested_scope,
            "extra": self.extra,
        }
        self.auth.store.put(self._key(self.issuer), record)
        self.auth.store.put(self.url, {"issuer": self.issuer})

    def forget_token(self) -> None:
        self.token = None
        self.save()

    # ----------------------------------------------------------- tokens

    def present(self, method: str, url: str, body: bytes | None, token: TokenSet) -> dict[str, str]:
        value = token.access_token.reveal()
        if token.token_type == "DPoP" and self.dpop is not None:
            return {
                "Authorization": self.scheme_value(token),
                "DPoP": self.dpop.proof(
                    method, url, access_token=value, nonce=self.rs_nonce, body=body
                ),
            }
        return {"Authorization": self.scheme_value(token)}

    def scheme_value(self, token: TokenSet) -> str:
        """The ``Authorization`` value presenting ``token``."""
        dpop = token.token_type == "DPoP" and self.dpop is not None
        return ("DPoP " if dpop else "Bearer ") + token.access_token.reveal()

    def adopt(self, token: TokenSet, ctx: Context, scope: str | None) -> None:
        """A new token from ``ctx``'s authorization server."""
        self.token = token
        self.token_endpoint = ctx.server.token_endpoint
        self.requested_scope = scope
        self.save()

    def use_dpop(self, ctx: Context) -> bool:
        """Whether to ask ``ctx``'s authorization server for a DPoP-bound token."""
        setting = self.auth.dpop
        offered = DPOP_ALGORITHM in (ctx.server.dpop_signing_alg_values_supported or ())
        if setting is False:
            return False
        if setting is True:
            if not offered:
                raise AuthError(
                    f"the authorization server of {ctx.server_url!r} does not offer DPoP with "
                    f"{DPOP_ALGORITHM}, and this auth requires DPoP (dpop=True)"
                )
            return True
        prm = ctx.resource_metadata
        wanted = "dpop" in ctx.challenge.schemes or (
            prm is not None
            and (prm.dpop_bound_access_tokens_required or bool(prm.dpop_signing_alg_values_supported))
        )
        return offered and wanted

    def refresh(self, fetcher: Fetcher, deadline: float) -> bool:
        """Refresh the current token; False (and the token dropped) when that
        cannot be done. Called with ``lock`` held."""
        token = self.token
        if token is None or token.refresh_token is None or self.token_endpoint is None or self.issuer is None:
            return False
        client = self.auth._refresh_client(self)
        form = {"grant_type": "refresh_token", "refresh_token": token.refresh_token.reveal()}
        resource = self.ctx.resource if self.ctx is not None else self.url
        form["resource"] = resource
        key = self.dpop
        endpoint = self.token_endpoint
        proof = (lambda nonce: key.proof("POST", endpoint, nonce=nonce)) if key is not None else None
        try:
            new = token_request(
                fetcher,
                endpoint,
                form,
                client,
                deadline,
                audience=self.issuer,
                what="the token refresh",
                proof=proof,
            )
        except Timeout:
            raise
        except AuthError:
            # invalid_grant and friends: the refresh token is spent.
            self.forget_token()
            return False
        self.token = keep_refresh(new, token)
        self.save()
        return True

    def acquire(
        self,
        fetcher: Fetcher,
        challenge: Challenge,
        deadline: float,
        *,
        inline_login: bool,
        scope: str | None = None,
        rediscover: bool = True,
    ) -> None:
        """Discover (again) and get a new token. Called with ``lock`` held."""
        ctx = self.ctx
        if rediscover or ctx is None:
            pinned = self.auth.issuer
            used = pinned is not None and self.issuer == pinned
            ctx = discover(fetcher, self.url, challenge, deadline, issuer=pinned, issuer_used=used)
            self.ctx = ctx
        self.switch_issuer(ctx.issuer)
        if scope is None:
            scope = select_scope(self.auth.scope, challenge, ctx)
        if self.use_dpop(ctx):
            if self.dpop is None:
                self.dpop = DpopKey()
        else:
            self.dpop = None
        run = Run(fetcher, ctx, self, deadline, inline_login)
        token = self.auth._acquire(run, scope)
        if token.token_type == "DPoP" and self.dpop is None:
            raise AuthError(
                f"server {fetcher.server!r}: the authorization server issued a DPoP-bound token "
                "that was not asked for"
            )
        self.adopt(token, ctx, scope)


class Binding:
    """What an ``HttpTransport`` consults for one session (see module doc)."""

    def __init__(self, auth: Auth, server: str, url: str, limits: Limits) -> None:
        self.auth = auth
        self.server = server
        self.url = url
        self.limits = limits
        self.grant = auth._grant(url)
        self.fetcher: Fetcher | None = None
        self.last_error: str | None = None
        self.established = False
        """Set by ``connect`` once the handshake is done: from then on a login
        that needs a person runs inline, bounded by the request's deadline."""

    def attach(self, client: httpx.Client, stopping: threading.Event, beside: Beside | None = None) -> None:
        self.fetcher = Fetcher(
            client, server=self.server, max_bytes=self.limits.max_frame_bytes, stopping=stopping, beside=beside
        )

    def __repr__(self) -> str:
        return f"<auth binding server={self.server!r}>"

    def _lock(self, deadline: float) -> None:
        remaining = deadline - time.monotonic()
        if remaining <= 0 or not self.grant.lock.acquire(timeout=min(remaining, threading.TIMEOUT_MAX)):
            raise Timeout(f"server {self.server!r}: waiting for authorization missed the deadline")

    def headers(self, method: str, url: str, body: bytes | None, deadline: float) -> dict[str, str]:
        """The credentials for one request (refreshing an expiring token first)."""
        assert self.fetcher is not None
        grant = self.grant
        self._lock(deadline)
        try:
            grant.load()
            token = grant.token
            if token is not None and not token.fresh():
                if not grant.refresh(self.fetcher, deadline):
                    token = grant.token = None
                    if not self.auth.interactive:
                        # Machine credentials: just get a new token now.
                        grant.acquire(
                            self.fetcher, Challenge(), deadline, inline_login=True,
                            scope=grant.requested_scope,
                        )
                        token = grant.token
                else:
                    token = grant.token
            if token is None:
                return {}
            return grant.present(method, url, body, token)
        finally:
            grant.lock.release()

    def current(self, method: str, url: str) -> dict[str, str]:
        """Credentials without any network exchange (for the closing DELETE)."""
        grant = self.grant
        if not grant.lock.acquire(timeout=1.0):
            return {}
        try:
            token = grant.token
            if token is None or not token.fresh():
                return {}
            return grant.present(method, url, None, token)
        finally:
            grant.lock.release()

    def observe(self, status: int, headers: httpx.Headers) -> None:
        """Every response: a new DPoP nonce (RFC 9449 §8.2), a success."""
        nonce = headers.get("dpop-nonce")
        grant = self.grant
        if nonce and _VISIBLE.match(nonce) and len(nonce) <= 1024:
            grant.rs_nonce = nonce
        if 200 <= status < 300:
            grant.step_ups = 0

    def refused(
        self, status: int, headers: httpx.Headers, sent: Mapping[str, str], deadline: float
    ) -> bool:
        """The server answered 401 or 403: get what it asks for. True: retry
        the request with the new credentials; False: give up (see
        :meth:`failure`). May raise the error that ends the attempt."""
        assert self.fetcher is not None
        grant = self.grant
        challenge = parse_challenges(headers.get_list("www-authenticate"))
        self.last_error = challenge.error
        nonce = headers.get("dpop-nonce")
        if (
            challenge.error == "use_dpop_nonce"
            and nonce
            and _VISIBLE.match(nonce)
            and len(nonce) <= 1024
            and "DPoP" in sent
        ):
            # RFC 9449 §9: the server wants a nonce in the proof; retry with it
            # (the transport bounds how many times).
            grant.rs_nonce = nonce
            return True
        self._lock(deadline)
        try:
            current = grant.token
            if current is not None and sent.get("Authorization") != grant.scheme_value(current):
                return True  # another thread already got new credentials
            if status == 401:
                return self._unauthorized(challenge, deadline)
            if challenge.error != "insufficient_scope":
                return False
            return self._step_up(challenge, deadline)
        finally:
            grant.lock.release()

    def _unauthorized(self, challenge: Challenge, deadline: float) -> bool:
        assert self.fetcher is not None
        grant = self.grant
        if grant.token is not None and grant.refresh(self.fetcher, deadline):
            return True
        grant.token = None
        grant.acquire(
            self.fetcher, challenge, deadline, inline_login=self.established
        )
        return True

    def _step_up(self, challenge: Challenge, deadline: float) -> bool:
        assert self.fetcher is not None
        grant = self.grant
        token = grant.token
        granted = set((token.scope or "").split()) if token is not None else set()
        wanted = set((challenge.scope or "").split())
        if not wanted or (token is not None and token.scope is not None and wanted <= granted):
            # Nothing more to ask for: the servers disagree; asking again would loop.
            raise AuthError(
                f"server {self.server!r} refused the request for lack of scope, and the token "
                "already carries the scope it asks for",
                "insufficient_scope",
            )
        if grant.step_ups >= MAX_STEP_UPS:
            raise AuthError(
                f"server {self.server!r} still refused the request for lack of scope after "
                f"{MAX_STEP_UPS} re-authorizations",
                "insufficient_scope",
            )
        grant.step_ups += 1
        scope = union_scopes(union_scopes(grant.requested_scope, token.scope if token else None), challenge.scope)
        grant.acquire(
            self.fetcher,
            challenge,
            deadline,
            inline_login=self.established,
            scope=scope,
            rediscover=grant.ctx is None,
        )
        new = grant.token
        if new is not None and new.scope is not None and not wanted <= set(new.scope.split()):
            # The authorization server would not grant it: asking again cannot help.
            raise AuthError(
                f"server {self.server!r} refused the request for lack of scope, and its "
                "authorization server did not grant that scope when asked",
                "insufficient_scope",
            )
        return True

    def failure(self, status: int) -> tuple[McpError, bool]:
        """The error for a refusal that no new credentials fixed, and whether
        it ends the session (401) or only this request (403)."""
        if status == 401:
            return (
                AuthError(
                    f"server {self.server!r} refused the credentials obtained for it (HTTP 401)",
                    "invalid_token",
                ),
                True,
            )
        if self.last_error == "insufficient_scope":
            return (
                AuthError(
                    f"server {self.server!r} refused the request for lack of scope (HTTP 403), "
                    "and re-authorizing did not obtain it",
                    "insufficient_scope",
                ),
                False,
            )
        return AuthError(f"server {self.server!r} refused the request (HTTP 403)"), False
