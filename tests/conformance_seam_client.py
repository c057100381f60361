"""The conformance client, with input requests answered through the session's seam.

``sep-2322-client-request-state`` checks how a client retries an ``input_required``
result (request state echoed exactly, a new JSON-RPC id, nothing shared with other
calls). Its server asks for ``elicitation/create`` answers, and until the handlers of
issue 13 exist no public API supplies one: this wrapper fills in
``_Core.answer_input_request`` -- the one call the retry loop makes for each input
request -- with "accept, no content", and otherwise runs ``conformance_client.py``
unchanged. Delete it once a handler can be passed to ``connect()``.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any

import conformance_client

from mcp_sync import _session


def _accept(self: Any, method: str, params: Mapping[str, Any], deadline: float) -> dict[str, Any]:
    if method != "elicitation/create":
        raise NotImplementedError(method)
    return {"action": "accept", "content": {}}


_session._Core.answer_input_request = _accept  # type: ignore[method-assign]

if __name__ == "__main__":
    sys.exit(conformance_client.main())
