"""OAuth 2.1 authorization for remote MCP servers, from blocking code.

Give one of these to :func:`mcp_sync.connect_http` as ``auth=``:

* :class:`AuthorizationCode` -- a person logs in in a browser (scripts,
  notebooks, web applications holding per-user tokens);
* :class:`ClientCredentials` -- a service with a client secret or a private
  key;
* :class:`WorkloadIdentity` -- a workload with a JWT from its platform;
* :class:`EnterpriseManagedAuthorization` -- an enterprise identity
  provider's ID token traded for access;
* :class:`TokenProvider` -- tokens the caller gets its own way.

Tokens live in a :class:`TokenStore`: :class:`MemoryTokenStore` (the default)
or :class:`FileTokenStore` (owner-only), or your own. The ``auth`` extra
(``pip install mcp-sync-client[auth]``) brings ``joserfc`` for private-key
JWTs and DPoP; it is imported only when a signature is made.
"""

from __future__ import annotations

from ._base import Auth, TokenProvider
from ._client_credentials import ClientCredentials
from ._code import AuthorizationCode, PendingLogin
from ._extensions import EnterpriseManagedAuthorization, WorkloadIdentity
from ._store import FileTokenStore, MemoryTokenStore, TokenStore

__all__ = [
    "Auth",
    "AuthorizationCode",
    "ClientCredentials",
    "EnterpriseManagedAuthorization",
    "FileTokenStore",
    "MemoryTokenStore",
    "PendingLogin",
    "TokenProvider",
    "TokenStore",
    "WorkloadIdentity",
]
