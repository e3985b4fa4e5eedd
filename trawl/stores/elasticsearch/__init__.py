"""The Elasticsearch store, one module per concern; this module is the plugin.

* :mod:`.config`: reading its settings (defaults in ``trawl/settings.py`` only);
* :mod:`.connection`: ``STORE_URI``, clients, an unreachable cluster in one line;
* :mod:`.templates`: index names, strict ECS mappings, composable templates;
* :mod:`.documents`: a URL's ``_id`` and JSON document around :mod:`trawl.records.provenance`;
* :mod:`.writer`: the sans-IO batch write (create, merge with ``if_seq_no``,
  backoff on 429s and failed requests) and its sync and async drivers;
* :mod:`.deadletters`: what the cluster still refused, and ``scrapy es-replay``;
* :mod:`.reading`: URL-ordered listings (``read_runs``, ``read_domain``);
* :mod:`.query`: a :mod:`trawl.search` syntax tree as the query DSL;
* :mod:`.search`: ``scrapy search``;
* :mod:`.store`: :class:`ElasticsearchStore`, the contract's every Protocol.

Registered in code, as every built-in is (``DEFAULT_PLUGINS`` in
:mod:`trawl.pipeline.manager`), through the same ``trawl_register_stores`` hook
a third-party store implements. The ``elasticsearch`` client is imported only
when a store talks to a cluster, not when this plugin is loaded. Users' guide:
docs/elasticsearch.md.
"""

from __future__ import annotations

from trawl import hookimpl
from trawl.lazyclasses import LazyClasses, lazy_attributes

# Imported on first use: registering the plugin costs a command that reads another store nothing.
__getattr__ = lazy_attributes(
    __name__,
    {
        "ElasticsearchSearcher": "trawl.stores.elasticsearch.search:ElasticsearchSearcher",
        "ElasticsearchStore": "trawl.stores.elasticsearch.store:ElasticsearchStore",
    },
)
_STORES = LazyClasses({"elasticsearch": "trawl.stores.elasticsearch.store:ElasticsearchStore"})


@hookimpl
def trawl_register_stores() -> LazyClasses:
    return _STORES


__all__ = ["ElasticsearchSearcher", "ElasticsearchStore", "trawl_register_stores"]
