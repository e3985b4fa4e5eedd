"""The crates.io source: the registry's metadata as record kinds of their own.

Modules, each with one concern:

* :mod:`.records`: the record kinds (``crate``, ``version``, ``dependency``,
  ``version_download``), declared
  with their key and merge rule, so every store keeps them without knowing crates.io;
* :mod:`.blocks`: a CSV member cut into blocks of whole records, as a stream
  (quoted fields span lines, so a line splitter breaks rows);
* :mod:`.tables`: one dump table's block to a batch frame, by header name, with
  PostgreSQL's CSV conventions (``t``/``f``, ``{a,b}``, empty = NULL);
* :mod:`.dump`: the db-dump tar.gz read as a stream (``tarfile`` mode ``r|``, inflated in bounded steps);
* :mod:`.api`, :mod:`.apifetch`, :mod:`.apirecords`, :mod:`.policy`: ``-a mode=api``,
  crates.io's API at one request a second (the crawl, one request and its answer,
  answers as records, the arguments and the User-Agent policy);
* :mod:`.incremental`: ``-a mode=incremental``, and what the API modes read from the store;
* :mod:`.zipstream`: the zip variant's members, read from the stream's local headers;
* :mod:`.stream`: the download handler that streams the dump's body to the reading thread
  (decoded of its ``Content-Encoding`` by :mod:`trawl.politeness.decoding`, after any redirect);
* :mod:`.snapshot`: one dump as one snapshot (skip a dump not newer, stage, switch);
* :mod:`.parquet`: the raw layer, a Parquet dataset per table partitioned by dump date;
* :mod:`.history`, :mod:`.archive`: ``-a history=DAYS``, the per-day archive of version
  downloads before the dump's 90 days (the fetch; one day's CSV, its kinds and Parquet);
* :mod:`.bridge`: ``-a domain=``, the crates' URLs on a domain into the URL store;
* :mod:`.spider`: the ``crates`` source (``trawl crawl crates``).
"""
