"""The serving process of tests/serving/test_prom_multiproc.sh, the way vLLM
serves /metrics in multiprocess mode: a registry holding prometheus_client's
MultiProcessCollector over PROMETHEUS_MULTIPROC_DIR, on an HTTP server.

  server.py PORT     serves 127.0.0.1:PORT, prints "serving", runs until
                     stdin closes"""
import sys

from prometheus_client import CollectorRegistry, start_http_server
from prometheus_client.multiprocess import MultiProcessCollector

registry = CollectorRegistry()
MultiProcessCollector(registry)
start_http_server(int(sys.argv[1]), addr="127.0.0.1", registry=registry)
print("serving", flush=True)
sys.stdin.read()
