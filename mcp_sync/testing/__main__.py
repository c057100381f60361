from mcp_sync.testing._server import main

main()
