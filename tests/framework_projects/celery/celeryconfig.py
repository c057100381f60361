"""Celery settings for the test (scaffolding): kombu's filesystem transport as
the broker and the file result backend, both in this directory, so no broker
server is needed."""

from pathlib import Path

_here = Path(__file__).resolve().parent
_queue = _here / "broker" / "queue"
_processed = _here / "broker" / "processed"
_results = _here / "results"
for _folder in (_queue, _processed, _results):
    _folder.mkdir(parents=True, exist_ok=True)

broker_url = "filesystem://"
broker_transport_options = {
    "data_folder_in": str(_queue),
    "data_folder_out": str(_queue),
    "processed_folder": str(_processed),
    "store_processed": False,
    "polling_interval": 0.05,
}
broker_connection_retry_on_startup = True
result_backend = f"file://{_results}"
task_serializer = result_serializer = "json"
accept_content = ["json"]
worker_prefetch_multiplier = 1
