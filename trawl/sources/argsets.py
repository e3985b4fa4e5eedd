"""The arguments (``-a name=value``) every source, every URL source and every filter accepts.

Apart from the source base so that the run layer (``crawl all`` checks arguments before any
spider is built) reads them without importing the spiders' base and what it imports.
"""

from __future__ import annotations

from collections.abc import Mapping

#: ``-a config=``, waymore's config.yml: a URL source reads its filter lists, a source with an API
#: key its keys; the other sources take no such file (accepting it, they ignored it in silence).
CONFIG_ARGUMENT = "config"
CONFIG_HELP = "a waymore config.yml: its filter lists and API keys apply"

#: Arguments every source accepts, whatever its record kind, each with the line ``trawl list`` says.
SOURCE_ARGUMENT_HELP: Mapping[str, str] = {
    "limit_requests": "stop after this many data requests (default 0: no cap)",
    "check_only": "true: send only the counting requests and say what a full run would cost",
}
SOURCE_ARGUMENTS = frozenset(SOURCE_ARGUMENT_HELP)

#: Arguments a URL source (:class:`SourceSpider`) adds: its domain, filters and exports.
URL_ARGUMENT_HELP: Mapping[str, str] = {
    CONFIG_ARGUMENT: CONFIG_HELP,
    "domain": "the domain (required); *.example.com or a URL is read as its host",
    "subs": "include subdomains (default true)",
    "filters": "false: switch every waymore filter off (collect everything)",
    "from_date": "keep captures from this date, YYYY[MM[DD[hh[mm[ss]]]]]",
    "to_date": "keep captures up to this date, inclusive (to_date=2020 keeps all of 2020)",
    "keywords_only": "true: keep only URLs holding one of FILTER_KEYWORDS",
    "new_only": "true: export (-o/-O) only the URLs this run added to the store",
}
URL_ARGUMENTS = frozenset(URL_ARGUMENT_HELP)

#: Arguments every URL source accepts, beyond the filter names.
COMMON_ARGUMENTS = SOURCE_ARGUMENTS | URL_ARGUMENTS

#: The waymore filter lists, each settable with ``-a name=``.
FILTER_ARGUMENT_HELP: Mapping[str, str] = {
    name: f"replace {name.upper()} for this run (comma-separated)"
    for name in ("filter_code", "filter_mime", "filter_url", "filter_keywords", "match_code", "match_mime")
}
FILTER_ARGUMENTS = frozenset(FILTER_ARGUMENT_HELP)
