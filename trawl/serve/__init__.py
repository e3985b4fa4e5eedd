"""``trawl serve``: the store in a browser, on datasette (PyPI ``datasette``), read-only.

* :mod:`.store`: which file to serve, the indexes the pages need, the tables it holds;
* :mod:`.fts`: the full-text index of the URLs, in a side file next to the store;
* :mod:`.views`: the canned queries named for what users ask (URLs, hosts, runs, new...);
* :mod:`.finder`: trawl's query language, the words box and the facets, as SQL;
* :mod:`.charts`: the charts, drawn as SVG on the server (no JavaScript, no CDN);
* :mod:`.exports`: the txt, CSV and JSON lines downloads, written as ``trawl search`` writes them;
* :mod:`.plugin`: the datasette plugin (its routes and its connection set-up);
* :mod:`.app`: the datasette instance and the server bound to its socket.

Nothing here is imported by ``trawl`` at start-up: ``trawl serve`` imports it in ``run()``.
"""
