"""The responses source: what the archive holds for stored URLs, downloaded once each (issue 18 item 1).

Modules, each with one concern:

* :mod:`.records`: the ``response`` record kind (the index: url, timestamp, digest,
  status, mime, length, file), declared with its key and merge rule, so every store
  keeps it without knowing the archive;
* :mod:`.naming`: file names from content hashes, per-host folders, nothing a URL,
  a header or an archive answer can turn into a path outside ``FILES_STORE``;
* :mod:`.safestore`: the local ``FILES_STORE`` that refuses symlinks and writes atomically;
* :mod:`.captures`: which captures of a URL (CDX query and choice: latest, all, yearly);
* :mod:`.replay`: the raw ``id_`` replay URL and the "no memento" answer;
* :mod:`.local`: saved responses from a folder (waymore's results) or WARC files;
* :mod:`.index`: the index read back (known digests; batches for a miner);
* :mod:`.pipeline`: the ``FilesPipeline`` subclass that downloads and stores the files;
* :mod:`.spider`: the ``responses`` source (``trawl crawl responses``).
"""
