"""A server on the official Python SDK 1.x (``mcp==1.6.0``, the version chroma-mcp 0.2.6 pins, installed by
scripts/test into its own venv, .cache/mcp1-venv: 1.x and 2.x cannot share
one), like chroma-mcp 0.2.6: its ``FastMCP`` over stdio, one tool ``echo``.
An SDK 1.x server exits when its first request is not ``initialize``.

    .cache/mcp1-venv/bin/python tests/peers/sdk1_server.py
"""

from mcp.server.fastmcp import FastMCP

server = FastMCP("sdk1-peer")


@server.tool()
def echo(message: str) -> str:
    """Echo the message back."""
    return message


if __name__ == "__main__":
    server.run("stdio")
