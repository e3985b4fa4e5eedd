"""URLs a run passed on already, when no store keeps them: 64-bit hashes, not strings.

With a store, the store's own index says which URLs this run wrote before
(``repeat``). Without one (``STORE_URI`` empty: exports only) this set does,
in 8 bytes a URL: a Python set of 5,000,000 URL strings took ~600 MB. The
hashes live in a few sorted polars arrays of doubling size (a log-structured
merge), so adding a batch costs its own sort plus, now and then, one merge.
Two distinct URLs share a 64-bit hash with probability ~n²/2⁶⁵ (7e-7 for five
million): such a URL would be stored but left out of this run's ``-o`` file.
"""

from __future__ import annotations

import polars as pl

_SEED = 0x7472617716


class SeenUrls:
    """A growing set of URL hashes with batch lookups."""

    def __init__(self) -> None:
        self.levels: list[pl.Series] = []

    def __len__(self) -> int:
        return sum(len(level) for level in self.levels)

    def contains(self, urls: pl.Series) -> pl.Series:
        """A boolean Series: which of ``urls`` the set holds (nothing is added)."""
        return self._lookup(urls.hash(seed=_SEED))

    def add(self, urls: pl.Series) -> pl.Series:
        """Add a batch of distinct URLs; return a boolean Series: seen before this call."""
        hashes = urls.hash(seed=_SEED)
        seen = self._lookup(hashes)
        fresh = hashes.filter(~seen).sort()
        if len(fresh):
            self.levels.append(fresh)
            while len(self.levels) > 1 and len(self.levels[-2]) <= 2 * len(self.levels[-1]):
                top = self.levels.pop()
                self.levels[-1] = pl.concat([self.levels[-1], top]).sort()
        return seen

    def _lookup(self, hashes: pl.Series) -> pl.Series:
        seen = pl.Series([False] * len(hashes), dtype=pl.Boolean)
        for level in self.levels:
            position = level.search_sorted(hashes).clip(0, len(level) - 1)
            seen |= level.gather(position) == hashes
        return seen
