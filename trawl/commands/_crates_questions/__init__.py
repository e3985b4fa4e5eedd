"""Questions users ask of the crates.io data, answered by ``trawl crates ...``.

* :mod:`.layers`: where the columns come from (the store, or the Parquet raw layer);
* :mod:`.graph`: ``deps`` and ``rdeps [--transitive]`` over each crate's current version;
* :mod:`.downloads`: ``top``, ``trends``, ``updated``, and the growth windows the alerts share.

Every answer is a polars frame computed over whole columns, the same from each
layer; the command (:mod:`trawl.commands.crates`) only prints it.
"""
