"""The responses source: what the archive holds for stored URLs, downloaded once each.

Modules, each with one concern:

* :mod:`.records`: the ``response`` record kind (the index: url, timestamp, digest,
  status, mime, length, file), declared with its key and merge rule, so every store
  keeps it without knowing the archive;
* :mod:`.naming`: file names from content hashes, per-host folders, nothing a URL,
  a header or an archive answer can turn into a path outside ``FILES_STORE``;
* :mod:`.captures`: which captures of a URL (CDX query and choice: latest, all, yearly);
* :mod:`.replay`: the raw ``id_`` replay URL and the "no memento" answer;
* :mod:`.local`: saved responses from a folder (waymore's results) or WARC files;
* :mod:`.mining`: the stored files mined in the mining pool, their findings sent on as batches;
* :mod:`.spider`: the ``responses`` source (``trawl crawl responses``).

The files themselves are downloaded and written by the pipeline the source puts
before trawl's own (:mod:`trawl.pipeline.responsefiles`).
"""
