"""Celery settings for the test (scaffolding): a private Redis server, started by the
test and named by MCP_SYNC_TEST_BROKER, is both the broker and the result backend.

(kombu's filesystem transport raced under load: a worker could read a message file
while it was still being written, JSONDecodeError, and the client then timed out.
Prefork pool processes cannot share ``memory://``, and the client is another process.)
"""

import os

broker_url = result_backend = os.environ["MCP_SYNC_TEST_BROKER"]
broker_connection_retry_on_startup = True
task_serializer = result_serializer = "json"
accept_content = ["json"]
worker_prefetch_multiplier = 1
