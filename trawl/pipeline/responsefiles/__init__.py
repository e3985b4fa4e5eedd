"""The responses source's files: downloaded once per digest and written where ``FILES_STORE`` says.

* :mod:`.pipeline`: the ``FilesPipeline`` subclass the responses source puts before trawl's
  item pipeline; it reads the store's index of stored files (:mod:`trawl.pipeline.runstore`);
* :mod:`.safestore`: the local ``FILES_STORE`` that refuses symlinks and writes atomically.
"""
