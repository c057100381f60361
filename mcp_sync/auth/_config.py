"""The ``"auth"`` object of an HTTP server entry in a config file.

Secrets never appear in the file: a client secret or an ID token is named by
the environment variable holding it (``...Env``), a private key or a
workload token by the file holding it (``...File``). Values are read when the
server is connected, like ``bearerTokenEnv``.
"""

from __future__ import annotations

import os
import re
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictStr, field_validator
from pydantic.alias_generators import to_camel

from ..protocol.errors import ProtocolError

__all__ = ["AuthConfig"]

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
NonEmpty = Annotated[StrictStr, Field(min_length=1)]


def _env(name: str | None, server: str, field: str) -> str | None:
    if name is None:
        return None
    value = os.environ.get(name, "")
    if not value:
        raise ProtocolError(
            f"server {server!r}: the environment variable {name} named by auth.{field} is unset or empty"
        )
    return value


def _file(path: str | None, server: str, field: str) -> str | None:
    if path is None:
        return None
    try:
        with open(os.path.expanduser(path), encoding="utf-8") as handle:
            return handle.read(1024 * 1024)
    except OSError as exc:
        raise ProtocolError(
            f"server {server!r}: the file named by auth.{field} cannot be read "
            f"({exc.strerror or type(exc).__name__})"
        ) from None


ClientAuthMethod = Literal["client_secret_basic", "client_secret_post", "private_key_jwt"]


class _AuthBase(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, alias_generator=to_camel, frozen=True)

    scope: NonEmpty | None = None
    token_store: NonEmpty | None = None
    """A file for :class:`FileTokenStore` (default: memory only)."""
    dpop: bool | Literal["auto"] = "auto"
    issuer: NonEmpty | None = None
    """Pins the authorization server (its issuer URL)."""
    any_issuer: bool = False
    """Send the client's credential to whichever authorization server the MCP server names."""

    @field_validator("*", mode="after")
    @classmethod
    def _env_names(cls, value: Any, info: Any) -> Any:
        is_env = isinstance(info.field_name, str) and info.field_name.endswith("_env")
        if is_env and value is not None and not _ENV_NAME.match(value):
            raise ValueError("must be an environment variable name (letters, digits, _)")
        return value

    def _common(self) -> dict[str, Any]:
        from ._store import FileTokenStore

        store = FileTokenStore(os.path.expanduser(self.token_store)) if self.token_store else None
        return {
            "scope": self.scope, "store": store, "dpop": self.dpop,
            "issuer": self.issuer, "any_issuer": self.any_issuer,
        }  # fmt: skip


class OAuthConfig(_AuthBase):
    """A person's login (authorization code with PKCE)."""

    type: Literal["oauth"]
    client_name: NonEmpty = "mcp-sync"
    client_id: NonEmpty | None = None
    client_secret_env: NonEmpty | None = None
    client_metadata_url: NonEmpty | None = None
    redirect_uri: NonEmpty | None = None
    token_endpoint_auth_method: Literal["client_secret_basic", "client_secret_post"] | None = None

    def build(self, server: str) -> Any:
        from ._code import AuthorizationCode

        return AuthorizationCode(
            client_name=self.client_name,
            client_id=self.client_id,
            client_secret=_env(self.client_secret_env, server, "clientSecretEnv"),
            client_metadata_url=self.client_metadata_url,
            redirect_uri=self.redirect_uri,
            token_endpoint_auth_method=self.token_endpoint_auth_method,
            **self._common(),
        )


class ClientCredentialsConfig(_AuthBase):
    """A service's own credentials."""

    type: Literal["client_credentials"]
    client_id: NonEmpty
    client_secret_env: NonEmpty | None = None
    private_key_file: NonEmpty | None = None
    signing_algorithm: NonEmpty = "ES256"
    token_endpoint_auth_method: ClientAuthMethod | None = None

    def build(self, server: str) -> Any:
        from ._client_credentials import ClientCredentials

        return ClientCredentials(
            self.client_id,
            client_secret=_env(self.client_secret_env, server, "clientSecretEnv"),
            private_key=_file(self.private_key_file, server, "privateKeyFile"),
            signing_algorithm=self.signing_algorithm,
            token_endpoint_auth_method=self.token_endpoint_auth_method,
            **self._common(),
        )


class WorkloadIdentityConfig(_AuthBase):
    """A workload's platform-issued JWT, read from its file at each use."""

    type: Literal["workload_identity"]
    assertion_file: NonEmpty
    client_id: NonEmpty | None = None

    def build(self, server: str) -> Any:
        from pathlib import Path

        from ._extensions import WorkloadIdentity

        return WorkloadIdentity(
            Path(os.path.expanduser(self.assertion_file)), client_id=self.client_id, **self._common()
        )


class EnterpriseConfig(_AuthBase):
    """Enterprise-managed authorization (an IdP's ID token exchanged for access)."""

    type: Literal["enterprise"]
    client_id: NonEmpty
    client_secret_env: NonEmpty | None = None
    private_key_file: NonEmpty | None = None
    idp_token_endpoint: NonEmpty
    idp_client_id: NonEmpty | None = None
    idp_client_secret_env: NonEmpty | None = None
    id_token_env: NonEmpty | None = None
    id_token_file: NonEmpty | None = None
    token_endpoint_auth_method: ClientAuthMethod | None = None

    def build(self, server: str) -> Any:
        from pathlib import Path

        from ._extensions import EnterpriseManagedAuthorization

        if (self.id_token_env is None) == (self.id_token_file is None):
            raise ProtocolError(f"server {server!r}: give exactly one of auth.idTokenEnv and auth.idTokenFile")
        id_token: Any = (
            _env(self.id_token_env, server, "idTokenEnv")
            if self.id_token_env
            else Path(os.path.expanduser(str(self.id_token_file)))
        )
        return EnterpriseManagedAuthorization(
            client_id=self.client_id,
            client_secret=_env(self.client_secret_env, server, "clientSecretEnv"),
            private_key=_file(self.private_key_file, server, "privateKeyFile"),
            idp_token_endpoint=self.idp_token_endpoint,
            idp_client_id=self.idp_client_id,
            idp_client_secret=_env(self.idp_client_secret_env, server, "idpClientSecretEnv"),
            id_token=id_token,
            token_endpoint_auth_method=self.token_endpoint_auth_method,
            **self._common(),
        )


AuthConfig = Annotated[
    OAuthConfig | ClientCredentialsConfig | WorkloadIdentityConfig | EnterpriseConfig,
    Field(discriminator="type"),
]
