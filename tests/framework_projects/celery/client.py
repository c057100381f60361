"""Send the guide's echo task 16 times and wait for the results (scaffolding).
Prints a JSON report."""

import json

from tasks import echo

pending = [(index, echo.delay(f"message {index}")) for index in range(16)]
results = [(index, result.get(timeout=60, interval=0.05)) for index, result in pending]
wrong = [
    (index, value)
    for index, value in results
    if value != {"content": [{"type": "text", "text": f"message {index}"}], "isError": False}
]
print(json.dumps({"results": len(results), "wrong": wrong[:3]}))
