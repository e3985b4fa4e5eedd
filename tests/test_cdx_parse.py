"""Reading real CDX answers (recorded from the Internet Archive and Common Crawl)."""

from tests.samples import sample_body
from trawl.sources.cdx.parse import Dialect, _read_text, is_blocked, parse_page, parse_page_count


def test_ia_json_sample() -> None:
    page = parse_page(sample_body("ia_cdx_json_limit10.txt"))
    assert page.dialect is Dialect.IA
    assert page.rows == 10
    assert page.bad_lines == 0
    assert page.columns["urls"][0] == "http://www.commoncrawl.org:80/"
    assert page.columns["timestamps"][0] == "20080328041443"
    assert page.columns["statuses"][0] == "200"
    assert page.columns["mimes"][0] == "text/html"


def test_ia_json_truncated_keeps_whole_rows() -> None:
    body = sample_body("ia_cdx_json_limit10.txt")
    cut = body[: body.index(b"20080715220755") + 5]  # in the middle of the 9th row
    page = parse_page(cut)
    assert page.rows == 8
    assert page.bad_lines == 1


def test_ia_text_sample_with_resume_key() -> None:
    body = sample_body("ia_cdx_text_resumekey.txt")
    first_request = body.split(b"# ====")[0]
    page = parse_page(first_request)
    assert page.rows == 25
    assert page.bad_lines == 0  # the resume key line is not a row
    assert set(page.columns["urls"]) == {"http://www.cnn.com:80/"}


def test_pywb_ndjson_sample() -> None:
    page = parse_page(sample_body("cc_index_ndjson_limit10.txt"))
    assert page.dialect is Dialect.PYWB
    assert page.rows == 10
    assert page.columns["urls"][1] == "http://commoncrawl.org"
    assert page.columns["statuses"][1] == "301"


def test_page_counts() -> None:
    assert parse_page_count(b"42\n").pages == 42
    assert parse_page_count(b"42\n").dialect is Dialect.IA
    pywb = parse_page_count(sample_body("cc_index_showNumPages.txt"))
    assert pywb is not None and pywb.dialect is Dialect.PYWB and pywb.pages == 1
    assert parse_page_count(b"<html>error</html>") is None
    assert parse_page_count(b"Sorry, this server is not configured to support paged query.") is None


def test_blocked_site_error() -> None:
    body = sample_body("ia_cdx_blocked_site_403.txt")
    assert is_blocked(403, b"", body)
    assert is_blocked(
        200, b"", b"org.archive.wayback.exception.AdministrativeAccessControlException: Blocked Site Error"
    )
    assert not is_blocked(200, b"", b"com,example)/ 2020 http://example.com/ text/html 200 X 1")


def test_empty_and_garbage() -> None:
    assert parse_page(b"").rows == 0
    assert parse_page(b"[]\n").rows == 0
    garbage = parse_page(b'[["original","timestamp"],\n["http://a.com/", "2020')
    assert garbage.rows == 0 and garbage.bad_lines == 1


FIELDS = ("original", "timestamp", "statuscode", "mimetype", "digest", "length")
TEXT = (
    b"http://example.com/ 20200101000000 200 text/html AAAA 100\n"
    b"https://example.com/a 20200102000000 - warc/revisit BBBB 120\n"
)


def test_ia_text_with_fl_fields() -> None:
    page = parse_page(TEXT, FIELDS)
    assert page.rows == 2 and page.bad_lines == 0
    assert page.columns["urls"] == ["http://example.com/", "https://example.com/a"]
    assert page.columns["statuses"] == ["200", "-"]


def test_ia_text_well_formed_page_is_read_in_one_columnar_read() -> None:
    # The careful path reads the same values a Python string at a time (2.5x the CPU):
    # it must stay the exception, whatever polars' version calls its reader's options.
    page = _read_text(TEXT, FIELDS)
    assert page is not None and page.rows == 2
    assert page.columns["statuses"] == ["200", "-"]
    with_empty_field = TEXT.replace(b" AAAA ", b"  ")
    page = _read_text(with_empty_field, FIELDS)
    assert page is not None and page.frame.get_column("digest").to_list() == ["", "BBBB"]


def test_ia_text_truncated_last_line_is_dropped() -> None:
    page = parse_page(TEXT[:-20], FIELDS)  # cut inside the digest of the 2nd line
    assert page.rows == 1 and page.bad_lines == 1
    cut_in_last_field = parse_page(TEXT[:-2], FIELDS)  # "120" became "12": still not trusted
    assert cut_in_last_field.rows == 1 and cut_in_last_field.bad_lines == 1


def test_ia_text_server_ignoring_fl() -> None:
    line = b"com,example)/ 20200101000000 http://example.com/ text/html 200 AAAA 100\n"
    page = parse_page(line * 3, FIELDS)
    assert page.rows == 3
    assert page.columns["urls"] == ["http://example.com/"] * 3
    assert page.columns["mimes"] == ["text/html"] * 3


def test_pywb_ndjson_fields_as_text_whatever_json_type() -> None:
    """Numbers come as their text, absent fields as "", fields not ours ignored: one columnar read."""
    body = (
        b'{"url": "http://example.com/a", "timestamp": 20200101000000, "status": 200, "length": 12,'
        b' "offset": 7, "filename": "x.warc.gz"}\n'
        b'{"url": "http://example.com/b", "timestamp": "20210101000000", "status": null,'
        b' "mime": "text/html"}\n'
    )
    page = parse_page(body)
    assert (page.dialect, page.rows, page.bad_lines) == (Dialect.PYWB, 2, 0)
    assert page.frame.rows() == [
        ("http://example.com/a", "20200101000000", "200", "", "", "12"),
        ("http://example.com/b", "20210101000000", "", "text/html", "", ""),
    ]
