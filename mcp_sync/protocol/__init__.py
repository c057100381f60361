"""Values and wire rules: the bottom layer.

What the library knows about MCP and JSON-RPC without any connection: the
error kinds (``errors``), the limits and their checks (``limits``), JSON-RPC
frames and the checks on inbound bytes (``frames``, ``oversize``), the tool
catalog and deep freezing (``catalog``), typed results (``typed_results``),
structured output checks and the linear-time engine for a server's regular
expressions (``output_check``, ``patterns``), redaction, the stderr tail and
text made safe to show (``redaction``, ``stderr_tail``, ``text``), secrets that refuse to print (``secret``),
protocol revisions (``versions``), roots (``roots``) and the declaration side
of flows (``flow_declarations``).

Modules here import only each other and the standard library (and, lazily,
the packages an extra brings): nothing of the transports, the session or
anything above.
"""
