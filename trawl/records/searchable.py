"""The built-in record kinds that declare search fields, by the light module that declares them.

A kind's ``SEARCH_FIELDS`` is an attribute of its batch type, but the batch type
imports polars, which ``trawl search`` never does (0.15-0.2 s of a 0.5 s search):
a built-in kind keeps its declaration in a module of its own, named here, and its
batch type takes it from there. A plugin's kind is declared when its batch type
is defined (the plugin manager imports the plugin before a search parses).
"""

from __future__ import annotations

#: Kind -> ``module:ATTRIBUTE`` of its ``SEARCH_FIELDS``.
BUILTIN_SEARCH_FIELDS: dict[str, str] = {
    "probe": "trawl.sources.probe.fields:SEARCH_FIELDS",
}
