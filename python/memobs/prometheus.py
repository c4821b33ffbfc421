"""memobs' figures in prometheus_client's registry, for an engine that
already serves /metrics with prometheus_client (vLLM, SGLang, a FastAPI or
aiohttp app with make_asgi_app / start_http_server):

    from prometheus_client import REGISTRY
    import memobs.prometheus
    REGISTRY.register(memobs.prometheus.Collector())

Each scrape (each collect()) takes one snapshot of memobs,
memobs.format_prometheus(), the text MEMOBS_PROM_FILE writes, and yields
its families as they are there: the same names (memobs_*), label sets
(job_id, rank, local_rank, host and each family's own), types (counters,
gauges, histograms with their buckets, _sum and _count), HELP texts and
values. docs/exports/prometheus.md lists the families. The text is parsed
by prometheus_client's own parser (prometheus_client.parser), which names a
counter family without its _total, as the client's exposition expects.

It reads the memobs the package records into: the package's private one,
or the LD_PRELOAD library's when the package is attached to it
(memobs.instance() == "preload"; then the copies and allocations the
library intercepts are in it too). Register it in the process that records:
a scrape sees that process's memobs only.

Values are floats, as every value prometheus_client holds: a count above
2**53 (a byte counter past 8 PiB) rounds to the nearest float.

describe() names the families of a snapshot taken when it is called
(without their samples), so that a registry refuses a second Collector, or
a collector whose names clash with memobs', with ValueError; a
CollectorRegistry() checks the names of collectors that describe
themselves only. Families memobs writes once something happened
(collectives, peers, the host sampler's, user counters) are checked only if
they were there at registration.

Needs prometheus_client 0.16 or newer (pip install prometheus-client;
Debian: python3-prometheus-client); importing this module without it raises
ImportError saying so. The rest of the package does not need it.
"""
try:
    from prometheus_client.metrics_core import Metric
    from prometheus_client.parser import text_string_to_metric_families
    from prometheus_client.registry import Collector as _Collector
except ImportError as _e:
    raise ImportError("memobs.prometheus needs prometheus_client, which this Python cannot import (%s): install it "
                      "with `pip install prometheus-client`, or Debian's package python3-prometheus-client" % _e,
                      name="prometheus_client") from _e

from . import format_prometheus

__all__ = ["Collector"]


class Collector(_Collector):
    """A prometheus_client collector of memobs' families: register it once
    per registry (REGISTRY.register(Collector()))."""

    def collect(self):
        """memobs' families from one snapshot, as prometheus_client Metric
        objects (a counter named without its _total, its samples with it)."""
        yield from text_string_to_metric_families(format_prometheus())

    def describe(self):
        """The families of a snapshot taken now, without their samples: the
        names a registry checks for clashes at register()."""
        return [Metric(m.name, m.documentation, m.type) for m in self.collect()]
