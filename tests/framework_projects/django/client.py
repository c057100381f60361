"""The guide's view through Django's test client, from 8 threads at once
(test scaffolding). Prints a JSON report."""

import json
import os
import threading

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mysite.settings")
django.setup()

from django.test import Client  # noqa: E402

answers: list[tuple[int, int, dict[str, object]]] = []
lock = threading.Lock()


def client(start: int) -> None:
    browser = Client()
    for index in range(start, start + 20):
        response = browser.get("/echo", {"m": f"message {index}"})
        with lock:
            answers.append((index, response.status_code, response.json()))


threads = [threading.Thread(target=client, args=(n * 20,)) for n in range(8)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
wrong = [a for a in answers if a[1] != 200 or a[2] != {"text": f"message {a[0]}", "tool_error": False}]
print(json.dumps({"answers": len(answers), "wrong": wrong[:5]}))
