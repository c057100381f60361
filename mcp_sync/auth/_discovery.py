"""Finding the authorization server the MCP way.

1. Parse the server's ``WWW-Authenticate`` challenges (RFC 9110 §11.6.1):
   ``resource_metadata`` (RFC 9728 §5.1), ``scope`` and ``error``.
2. Fetch the protected resource metadata (RFC 9728): the URL from the
   challenge, then the path-aware well-known URL, then the root one; refuse a
   document whose ``resource`` is not this server.
3. Fetch the authorization server metadata (RFC 8414 with path insertion,
   then OpenID Connect discovery), refuse one whose ``issuer`` differs from
   the issuer it was looked up by (RFC 8414 §3.3), and fall back to the
   2025-03-26 rules (metadata at the server's origin, then fixed endpoints)
   when the server publishes no resource metadata at all.

Everything a server sends is untrusted: field types are checked, URLs must be
https (http only to loopback), and no message repeats a value.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from ..protocol.errors import AuthError
from ._fetch import Fetcher
from ._urls import check_oauth_url, origin, resource_matches, same_origin

__all__ = [
    "Challenge",
    "Context",
    "ResourceMetadata",
    "ServerMetadata",
    "discover",
    "parse_challenges",
]

MAX_CHALLENGE_CHARS = 8192
_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
_TOKEN68 = re.compile(r"[A-Za-z0-9\-._~+/]+=*")
_SCOPE = re.compile(r"[\x21\x23-\x5b\x5d-\x7e]+(?: [\x21\x23-\x5b\x5d-\x7e]+)*\Z")


# ------------------------------------------------------------------ challenges


@dataclass(frozen=True)
class Challenge:
    """What the server's ``WWW-Authenticate`` said, reduced to what a client uses."""

    schemes: frozenset[str] = frozenset()
    """Lower-cased schemes offered (``"bearer"``, ``"dpop"``)."""
    resource_metadata: str | None = None
    scope: str | None = None
    error: str | None = None


def parse_challenges(values: list[str]) -> Challenge:
    """Parse every ``WWW-Authenticate`` field value. Malformed or oversized
    input yields what could be read, never an exception."""
    text = ", ".join(values)
    if len(text) > MAX_CHALLENGE_CHARS:
        return Challenge()
    challenges = _tokenize(text)
    schemes = frozenset(scheme for scheme, _ in challenges)
    picked: dict[str, str] = {}
    for scheme, params in challenges:
        if scheme not in ("bearer", "dpop"):
            continue
        for name in ("resource_metadata", "scope", "error"):
            if name in params and name not in picked:
                picked[name] = params[name]
    scope = picked.get("scope")
    if scope is not None and not _SCOPE.match(scope):
        scope = None
    return Challenge(
        schemes=schemes,
        resource_metadata=picked.get("resource_metadata"),
        scope=scope,
        error=picked.get("error"),
    )


def _tokenize(text: str) -> list[tuple[str, dict[str, str]]]:
    """The challenges of ``text`` as (scheme, params); stops at the first malformed part."""
    out: list[tuple[str, dict[str, str]]] = []
    pos: int | None = _skip(text, 0, " \t,")
    while pos is not None and pos < len(text):
        match = _TOKEN.match(text, pos)
        if match is None:
            break
        params: dict[str, str] = {}
        out.append((match.group().lower(), params))
        pos = _read_params(text, match.end(), params)
    return out


def _skip(text: str, pos: int, chars: str) -> int:
    while pos < len(text) and text[pos] in chars:
        pos += 1
    return pos


def _read_params(text: str, pos: int, params: dict[str, str]) -> int | None:
    """Read one challenge's auth-params (or token68) from ``pos`` into ``params``.

    Returns where the next challenge's scheme starts, or ``None`` when the
    text ends or the rest cannot be read.
    """
    end = len(text)
    while True:
        pos = _skip(text, pos, " \t,")
        name_match = _TOKEN.match(text, pos)
        if name_match is None:
            return None
        after = _skip(text, name_match.end(), " \t")
        if after >= end or text[after] != "=":
            # No "=": the next challenge's scheme (or a token68, skipped).
            if not params and _TOKEN68.fullmatch(name_match.group()) and (
                after >= end or text[after] == ","
            ):
                pos = after
                continue
            return pos
        if after + 1 < end and text[after + 1] == "=" and not params:
            # A token68 ending in "=" padding.
            token68 = _TOKEN68.match(text, pos)
            pos = token68.end() if token68 else after + 1
            continue
        value, pos = _param_value(text, _skip(text, after + 1, " \t"))
        if value is None:
            return None
        params.setdefault(name_match.group().lower(), value)


def _param_value(text: str, pos: int) -> tuple[str | None, int]:
    """A quoted string or a token at ``pos`` (``None``: neither) and the position after it."""
    if pos < len(text) and text[pos] == '"':
        return _quoted(text, pos)
    match = _TOKEN.match(text, pos)
    if match is None:
        return None, pos
    return match.group(), match.end()


def _quoted(text: str, pos: int) -> tuple[str | None, int]:
    chars: list[str] = []
    pos += 1
    while pos < len(text):
        ch = text[pos]
        if ch == "\\" and pos + 1 < len(text):
            chars.append(text[pos + 1])
            pos += 2
        elif ch == '"':
            return "".join(chars), pos + 1
        else:
            chars.append(ch)
            pos += 1
    return None, pos


# ------------------------------------------------------------------ documents


def _strings(doc: dict[str, Any], name: str, where: str) -> tuple[str, ...] | None:
    value = doc.get(name)
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise AuthError(f"{where}: field {name} is not an array of strings")
    return tuple(value)


def _flag(doc: dict[str, Any], name: str, where: str) -> bool:
    value = doc.get(name)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise AuthError(f"{where}: field {name} is not a boolean")
    return value


@dataclass(frozen=True)
class ResourceMetadata:
    """A validated protected resource metadata document (RFC 9728)."""

    resource: str
    authorization_servers: tuple[str, ...]
    scopes_supported: tuple[str, ...] | None = None
    dpop_bound_access_tokens_required: bool = False
    dpop_signing_alg_values_supported: tuple[str, ...] | None = None


@dataclass(frozen=True)
class ServerMetadata:
    """A validated authorization server metadata document (RFC 8414), or the
    2025-03-26 default endpoints (``found`` False)."""

    issuer: str
    token_endpoint: str
    authorization_endpoint: str | None = None
    registration_endpoint: str | None = None
    scopes_supported: tuple[str, ...] | None = None
    grant_types_supported: tuple[str, ...] | None = None
    token_endpoint_auth_methods_supported: tuple[str, ...] | None = None
    code_challenge_methods_supported: tuple[str, ...] | None = None
    dpop_signing_alg_values_supported: tuple[str, ...] | None = None
    client_id_metadata_document_supported: bool = False
    authorization_response_iss_parameter_supported: bool = False
    found: bool = True


@dataclass(frozen=True)
class Context:
    """What discovery established for one server: the resource indicator to
    send, the metadata documents, and the challenge that started it."""

    server_url: str
    resource: str
    server: ServerMetadata
    resource_metadata: ResourceMetadata | None
    challenge: Challenge = field(default_factory=Challenge)
    found_at: float = field(default_factory=time.monotonic)

    @property
    def issuer(self) -> str:
        return self.server.issuer


def _resource_metadata(doc: Any, server: str, server_url: str) -> ResourceMetadata | None:
    where = f"server {server!r}: its protected resource metadata"
    if not isinstance(doc, dict):
        return None
    resource = doc.get("resource")
    if not isinstance(resource, str) or not resource_matches(resource, server_url):
        raise AuthError(
            f"server {server!r} published protected resource metadata for a different resource; "
            "refusing to authorize"
        )
    servers = _strings(doc, "authorization_servers", where)
    if not servers:
        raise AuthError(f"{where} names no authorization server")
    for url in servers:
        check_oauth_url(url, "an authorization server in its resource metadata", server)
    return ResourceMetadata(
        resource=resource,
        authorization_servers=servers,
        scopes_supported=_strings(doc, "scopes_supported", where),
        dpop_bound_access_tokens_required=_flag(doc, "dpop_bound_access_tokens_required", where),
        dpop_signing_alg_values_supported=_strings(doc, "dpop_signing_alg_values_supported", where),
    )


def _server_metadata(
    doc: Any, expected: tuple[str, ...], server: str, *, legacy: bool
) -> ServerMetadata | None:
    where = f"server {server!r}: its authorization server metadata"
    if not isinstance(doc, dict):
        return None
    issuer = doc.get("issuer")
    # The 2025-03-26 rules put the authorization server at the MCP server's
    # origin by definition, and some such servers name an issuer with a path
    # there: on that path only, an issuer of the same origin is accepted.
    legacy_ok = legacy and isinstance(issuer, str) and same_origin(issuer, expected[0])
    if not isinstance(issuer, str) or (issuer not in expected and not legacy_ok):
        # RFC 8414 §3.3: a document naming another issuer MUST NOT be used.
        raise AuthError(
            f"server {server!r}: the authorization server metadata names an issuer other than "
            "the one it was looked up by; refusing to use it"
        )
    token_endpoint = check_oauth_url(doc.get("token_endpoint"), "the token endpoint", server)
    optional: dict[str, str | None] = {}
    for name in ("authorization_endpoint", "registration_endpoint"):
        value = doc.get(name)
        optional[name] = None if value is None else check_oauth_url(value, f"the {name}", server)
    return ServerMetadata(
        issuer=issuer,
        token_endpoint=token_endpoint,
        authorization_endpoint=optional["authorization_endpoint"],
        registration_endpoint=optional["registration_endpoint"],
        scopes_supported=_strings(doc, "scopes_supported", where),
        grant_types_supported=_strings(doc, "grant_types_supported", where),
        token_endpoint_auth_methods_supported=_strings(
            doc, "token_endpoint_auth_methods_supported", where
        ),
        code_challenge_methods_supported=_strings(doc, "code_challenge_methods_supported", where),
        dpop_signing_alg_values_supported=_strings(
            doc, "dpop_signing_alg_values_supported", where
        ),
        client_id_metadata_document_supported=_flag(
            doc, "client_id_metadata_document_supported", where
        ),
        authorization_response_iss_parameter_supported=_flag(
            doc, "authorization_response_iss_parameter_supported", where
        ),
    )


# ------------------------------------------------------------------ URLs to try


def resource_metadata_urls(server_url: str, from_challenge: str | None) -> list[str]:
    parts = urlsplit(server_url)
    base = origin(server_url)
    urls = [from_challenge] if from_challenge else []
    path = parts.path.rstrip("/")
    if path:
        urls.append(f"{base}/.well-known/oauth-protected-resource{path}")
    urls.append(f"{base}/.well-known/oauth-protected-resource")
    return urls


def server_metadata_urls(issuer: str) -> list[str]:
    parts = urlsplit(issuer)
    base = urlunsplit((parts.scheme, parts.netloc, "", "", ""))
    path = parts.path.rstrip("/")
    if path:
        return [
            f"{base}/.well-known/oauth-authorization-server{path}",
            f"{base}/.well-known/openid-configuration{path}",
            f"{base}{path}/.well-known/openid-configuration",
        ]
    return [f"{base}/.well-known/oauth-authorization-server", f"{base}/.well-known/openid-configuration"]


# ------------------------------------------------------------------ discovery


def discover(
    fetcher: Fetcher,
    server_url: str,
    challenge: Challenge,
    deadline: float,
    *,
    issuer: str | None = None,
    issuer_used: bool = False,
) -> Context:
    """Run discovery for the server at ``server_url``. ``issuer`` pins the
    authorization server to use when the resource metadata lists several;
    ``issuer_used``: the pinned one was found (and used) before."""
    server = fetcher.server
    prm = _find_resource_metadata(fetcher, server_url, challenge, deadline)
    if prm is None:
        # The 2025-03-26 rules: the authorization server lives at the MCP
        # server's origin, with metadata or with fixed endpoints.
        base = origin(server_url)
        meta = _find_server_metadata(fetcher, base, (base, base + "/"), deadline, legacy=True)
        if meta is None:
            meta = ServerMetadata(
                issuer=base,
                token_endpoint=f"{base}/token",
                authorization_endpoint=f"{base}/authorize",
                registration_endpoint=f"{base}/register",
                found=False,
            )
        return Context(server_url, server_url, meta, None, challenge)
    chosen = prm.authorization_servers[0]
    if issuer is not None:
        if issuer not in prm.authorization_servers:
            if issuer_used:
                raise AuthError(
                    f"server {server!r} no longer lists the authorization server this auth was "
                    "configured for (issuer)"
                )
            raise AuthError(
                f"server {server!r} does not list the authorization server this auth is pinned "
                "to (issuer) in its protected resource metadata"
            )
        chosen = issuer
    meta = _find_server_metadata(fetcher, chosen, (chosen,), deadline, legacy=False)
    if meta is None:
        raise AuthError(f"server {server!r}: its authorization server publishes no metadata")
    return Context(server_url, prm.resource, meta, prm, challenge)


def _find_resource_metadata(
    fetcher: Fetcher, server_url: str, challenge: Challenge, deadline: float
) -> ResourceMetadata | None:
    server = fetcher.server
    from_challenge = challenge.resource_metadata
    if from_challenge is not None:
        try:
            check_oauth_url(from_challenge, "the resource_metadata URL of its challenge", server)
        except AuthError:
            from_challenge = None
    failed_status: int | None = None
    for url in resource_metadata_urls(server_url, from_challenge):
        reply = fetcher.request("GET", url, deadline, what="protected resource metadata discovery")
        if reply.status == 200:
            found = _resource_metadata(reply.body, server, server_url)
            if found is not None:
                return found
        elif reply.status >= 500 or reply.status == 429:
            failed_status = reply.status
    if failed_status is not None:
        # An outage says nothing about whether metadata exists: do not fall
        # back to the 2025-03-26 rules because of it.
        raise AuthError(
            f"server {server!r}: protected resource metadata discovery failed (HTTP {failed_status})"
        )
    return None


def _find_server_metadata(
    fetcher: Fetcher, issuer: str, expected: tuple[str, ...], deadline: float, *, legacy: bool
) -> ServerMetadata | None:
    server = fetcher.server
    urls = [f"{issuer}/.well-known/oauth-authorization-server"] if legacy else server_metadata_urls(issuer)
    for url in urls:
        reply = fetcher.request("GET", url, deadline, what="authorization server metadata discovery")
        if reply.status == 200:
            found = _server_metadata(reply.body, expected, server, legacy=legacy)
            if found is not None:
                return found
        elif reply.status >= 500 or reply.status == 429:
            raise AuthError(
                f"server {server!r}: authorization server metadata discovery failed "
                f"(HTTP {reply.status})"
            )
    return None
