"""``trawl crawl probe``: which of the URLs trawl holds answer now, and how.

Modules, each with one concern:

* :mod:`.records`: the ``probe`` record kind (key ``url``, newer ``probed_at``);
* :mod:`.patterns`: one URL per path pattern (the rule, vectorized);
* :mod:`.answers`: an answer (or a failure) as a record: status, redirects, headers, title, TLS;
* :mod:`.fingerprint`: title, SHA-256, simhash, the favicon's mmh3 hash;
* :mod:`.soft404`: each origin's answer to a random path, and the live / soft-404 / dead verdict;
* :mod:`.transfer`: the body byte cap and the per-host concurrency;
* :mod:`.report`: the counts in the stats and the end-of-run table;
* :mod:`.spider`: the ``probe`` source.

The stored URLs it starts from are read by :mod:`trawl.sources.selection`.
Reference: ``docs/live.md``.
"""
