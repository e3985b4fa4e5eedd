"""waymore-compatible filters: sources of configuration and their meaning."""

from pathlib import Path
from urllib.parse import parse_qsl, urlencode

import pytest

from trawl import settings as defaults
from trawl.errors import TrawlUsageError
from trawl.pipeline.filters import build_filter_config
from trawl.sources.cdx.parse import Dialect, filter_params

SETTINGS = {name: getattr(defaults, name) for name in dir(defaults) if name.isupper()}
TEMPLATE = Path(__file__).parent / "data" / "waymore-config.template.yml"


def test_defaults_are_waymores() -> None:
    config = build_filter_config(SETTINGS, {})
    assert config.filter_code == ("404", "301", "302")
    assert "image/svg+xml" in config.filter_mime
    assert ".css" in config.filter_url
    text = TEMPLATE.read_text()
    for name in ("FILTER_CODE", "FILTER_MIME", "FILTER_URL", "FILTER_KEYWORDS"):
        line = next(li for li in text.splitlines() if li.startswith(name + ":"))
        expected = list(dict.fromkeys(line.split(":", 1)[1].strip().split(",")))
        assert list(getattr(config, name.lower())) == expected


def test_precedence_settings_config_args(tmp_path: Path) -> None:
    config_file = tmp_path / "config.yml"
    config_file.write_text("FILTER_CODE: 500\nFILTER_URL: .pdf\nTELEGRAM_BOT_TOKEN: x\n")
    settings = dict(SETTINGS, FILTER_CODE="418")
    assert build_filter_config(settings, {}).filter_code == ("418",)
    with_file = build_filter_config(settings, {"config": str(config_file)})
    assert with_file.filter_code == ("500",)
    assert with_file.filter_url == (".pdf",)
    with_arg = build_filter_config(settings, {"config": str(config_file), "filter_code": "403,401"})
    assert with_arg.filter_code == ("403", "401")


def test_filters_false_collects_everything() -> None:
    config = build_filter_config(SETTINGS, {"filters": "false"})
    assert config.url_allowed("http://example.com/a.css")
    assert config.code_allowed("404")
    assert config.server_codes == ((), False)


def test_client_side_rules() -> None:
    config = build_filter_config(SETTINGS, {})
    assert not config.url_allowed("http://example.com/STYLE.CSS")
    assert not config.url_allowed("http://example.com/wp-content/x.php")
    assert config.url_allowed("http://example.com/index.php")
    assert not config.code_allowed("404")
    assert not config.mime_allowed("image/svg+xml")
    assert not config.mime_allowed("warc/revisit")
    keywords = build_filter_config(SETTINGS, {"keywords_only": "true"})
    assert keywords.url_allowed("http://example.com/admin/")
    assert not keywords.url_allowed("http://example.com/about")
    matching = build_filter_config(SETTINGS, {"match_code": "200"})
    assert matching.code_allowed("200") and not matching.code_allowed("500")


def test_dates_inclusive() -> None:
    config = build_filter_config(SETTINGS, {"from_date": "2019", "to_date": "202002"})
    assert config.date_allowed("20190101000000")
    assert config.date_allowed("20200229235959")
    assert not config.date_allowed("20181231235959")
    assert not config.date_allowed("20200301000000")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"from_date": "2020-13"}, "not a real date"),
        ({"to_date": "yesterday"}, "expects a date"),
        ({"from_date": "2021", "to_date": "2020"}, "after to_date"),
        ({"filters": "maybe"}, "true or false"),
        ({"config": "/nonexistent/config.yml"}, "cannot read config file"),
    ],
)
def test_bad_filter_arguments(args: dict[str, str], message: str) -> None:
    with pytest.raises(TrawlUsageError, match=message):
        build_filter_config(SETTINGS, args)


def test_server_side_filter_encoding_keeps_plus() -> None:
    config = build_filter_config(SETTINGS, {"filter_mime": "image/svg+xml,text/css"})
    params = filter_params(config, Dialect.IA)
    assert params == [
        ("filter", "!statuscode:(404|301|302)"),
        ("filter", r"!mimetype:(warc/revisit|image/svg\+xml|text/css)"),
    ]
    # What a server decodes from the query string is exactly what was meant.
    assert parse_qsl(urlencode(params)) == params
    assert "%2B" in urlencode(params)
    pywb = filter_params(config, Dialect.PYWB)
    assert pywb[0] == ("filter", "!~status:(404|301|302)$")
