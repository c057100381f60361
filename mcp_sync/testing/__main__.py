from mcp_sync.testing._main import main

main()
