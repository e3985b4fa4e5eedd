"""The db-dump's read-ahead thread (``trawl/sources/crates/prefetch.py``): what it reads, raises, stops.

The thread inflates the archive and cuts its tables into blocks ahead of the
parsing; its errors must reach the reader as the same one-line ``DumpError``
naming the table, and it must stop when the reader stops (a load cut short by
an error or by the crawl's stop), never linger reading the download.
"""

from __future__ import annotations

import io
import threading

import pytest

from tests.servers.crates_dump import make_dump
from trawl.sources.crates.dump import DumpInfo, read_dump
from trawl.sources.crates.tables import DumpError

KEYWORDS = (
    ["id", "keyword", "crates_cnt", "created_at"],
    [{"id": n, "keyword": f"k{n}"} for n in range(1, 5001)],
)


def readers() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "trawl-crates-inflate" and t.is_alive()]


def wait_gone() -> bool:
    for thread in readers():
        thread.join(5)
    return not readers()


def test_every_row_comes_through_in_blocks_of_whole_records() -> None:
    dump = make_dump({"keywords": KEYWORDS})
    info = DumpInfo()
    batches = list(read_dump(io.BytesIO(dump), info, batch_rows=1000, block_bytes=4096))
    assert sum(b.frame.height for b in batches) == 5000
    assert [b.number for b in batches] == list(range(1, len(batches) + 1))
    assert sorted(k for b in batches for k in b.frame.get_column("keyword").to_list()) == sorted(
        f"k{n}" for n in range(1, 5001)
    )
    assert info.tables == 1 and info.snapshot == "2026-09-01-020003"
    assert wait_gone()


def test_a_table_ending_inside_a_quoted_field_is_one_error_naming_it() -> None:
    dump = make_dump({}, extra={"data/keywords.csv": b'id,keyword\n1,"an open quote\n2,x\n'})
    with pytest.raises(DumpError) as failure:
        list(read_dump(io.BytesIO(dump), DumpInfo()))
    assert str(failure.value) == "keywords.csv: the table ends inside a quoted field"
    assert wait_gone()


def test_a_reader_that_stops_early_stops_the_thread() -> None:
    """40 MB of records: more than the thread reads ahead (32 MiB), so it waits for room
    when the reader stops after one batch; closing the reader ends it."""
    rows = [{"id": n, "keyword": f"k{n}-" + "x" * 200} for n in range(1, 200_001)]
    dump = make_dump({"keywords": (KEYWORDS[0], rows)}, compresslevel=1)
    batches = read_dump(io.BytesIO(dump), DumpInfo(), batch_rows=100)
    assert next(batches).frame.height == 100
    assert readers()  # waiting for room in its queue
    batches.close()
    assert wait_gone()
