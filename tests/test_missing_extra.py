"""A feature whose optional dependency is missing raises MissingExtra (kind
``missing_extra``, also an ImportError) naming the extra, before anything is
started or sent. Each case runs in a fresh interpreter with the dependency
made unimportable."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

CASES = {
    "http": (
        "httpx",
        "mcp_sync.connect_http(server='s', url='http://127.0.0.1:9/mcp')",
        "the HTTP transport needs httpx: pip install 'mcp-sync-client[http]'",
    ),
    "validation": (
        "jsonschema",
        "mcp_sync.connect(server='s', command=sys.executable, args=['-m', 'mcp_sync.testing'], validate_output=True)",
        "option validate_output needs jsonschema: pip install 'mcp-sync-client[validation]'",
    ),
    "auth": (
        "joserfc",
        "__import__('mcp_sync.auth._jwt', fromlist=['joserfc']).joserfc()",
        "signing JWTs (private_key_jwt, DPoP) needs joserfc: pip install 'mcp-sync-client[auth]'",
    ),
    "skills": (
        "yaml",
        "__import__('mcp_sync.skills', fromlist=['x']).parse_frontmatter('---\\nname: a\\n---\\n')",
        "checking a skill's frontmatter needs PyYAML: pip install 'mcp-sync-client[skills]'",
    ),
    "testing": (
        "mcp",
        "__import__('mcp_sync.testing', fromlist=['x']).connect_in_process(object())",
        "connect_in_process needs the mcp SDK (2.3 or later): pip install 'mcp-sync-client[testing]'",
    ),
}


@pytest.mark.parametrize("extra", sorted(CASES))
def test_a_missing_extra_is_its_own_kind(extra: str) -> None:
    module, call, message = CASES[extra]
    script = textwrap.dedent(
        f"""
        import importlib.util, sys
        real = importlib.util.find_spec
        importlib.util.find_spec = lambda name, *a: None if name == {module!r} else real(name, *a)
        sys.modules[{module!r}] = None  # import {module} now fails
        import mcp_sync
        try:
            {call}
        except mcp_sync.MissingExtra as error:
            assert isinstance(error, ImportError) and isinstance(error, mcp_sync.McpError)
            assert not isinstance(error, ValueError)
            print(error.kind, error.extra, str(error), sep="|")
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"missing_extra|{extra}|{message}"
