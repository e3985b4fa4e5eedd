"""``trawl crawl live``: a breadth-first crawl of the live site.

Modules, each with one concern:

* :mod:`.scope`: which URLs may be fetched (``-a scope=domain|rdn|host|regex:``);
* :mod:`.redirects`: the redirects Scrapy follows (this crawl's and the probe's), into scope only;
* :mod:`.robots`: robots.txt read up to 500 KiB;
* :mod:`.links`: the URLs an answer names (HTML links, forms, scripts, JS endpoints, sitemaps, robots.txt);
* :mod:`.guard`: the trap guard (soft-404 hosts, the per-pattern cap);
* :mod:`.transfer`: what is downloaded (the byte cap, headers only) and the per-host concurrency;
* :mod:`.records`: what is stored (the URLs, and the ``link`` kind: where each was found);
* :mod:`.report`: the counts and the end-of-run summary;
* :mod:`.spider`: the ``live`` source.

Reference: ``docs/live.md``.
"""
