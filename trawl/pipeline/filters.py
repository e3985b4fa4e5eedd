"""waymore-compatible filters: what they are, where they come from, how they match.

Names and defaults follow waymore 8.9's ``config.yml`` (FILTER_CODE,
FILTER_MIME, FILTER_URL, FILTER_KEYWORDS) plus its match forms (MATCH_CODE,
MATCH_MIME), so a waymore user's config file works as it is (``-a config=``).

Precedence, lowest first: the defaults in :data:`FILTER_SETTINGS`, ``-s NAME=...``, the
``-a config=`` file, ``-a name=...``. ``-a filters=false`` turns all of them off.

Sources that can filter server-side (CDX ``filter=``) do so to save transfer;
the client-side check in the ``url_filter`` plugin applies the same rules to
every source anyway, so a server that ignores a filter (pywb's fuzzy fallback)
cannot leak filtered records into the store.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from trawl.errors import TrawlUsageError
from trawl.settings_checks import Setting, read, text_list
from trawl.sources.arguments import parse_bool, parse_date, split_list

if TYPE_CHECKING:  # a type only: read commands register this plugin without importing Scrapy
    from scrapy.settings import BaseSettings

FILTER_NAMES = ("FILTER_CODE", "FILTER_MIME", "FILTER_URL", "FILTER_KEYWORDS", "MATCH_CODE", "MATCH_MIME")
#: The status-code lists; waymore's ``validateArgStatusCodes`` takes 3-digit numbers only.
CODE_NAMES = ("FILTER_CODE", "MATCH_CODE")
_STATUS_CODE = re.compile(r"\d{3}")


def check_status_codes(where: str, value: object) -> None:
    """Refuse a status list that is not 3-digit codes, as waymore's ``-fc``/``-mc`` do.

    A code that no record has (``-a filter_code=abc``) matched nothing, so it
    quietly switched status filtering off instead of being refused.
    """
    for code in split_list(value):
        if not _STATUS_CODE.fullmatch(code):
            raise TrawlUsageError(
                f"{where} expects HTTP status codes of 3 digits, comma-separated (waymore's -fc/-mc),"
                f" e.g. 404,301,302; got {value!r}"
            )


def _check_codes(settings: BaseSettings, name: str, sources: Collection[str] | None) -> None:
    check_status_codes(name, settings.get(name))


# waymore 8.9's names and defaults.
_FILTER_CODE = "404,301,302"
_FILTER_MIME = (
    "text/css,image/jpeg,image/jpg,image/png,image/svg+xml,image/gif,image/tiff,image/webp,"
    "image/bmp,image/vnd,image/x-icon,image/vnd.microsoft.icon,font/ttf,font/woff,font/woff2,"
    "font/x-woff2,font/x-woff,font/otf,audio/mpeg,audio/wav,audio/webm,audio/aac,audio/ogg,"
    "audio/wav,audio/webm,video/mp4,video/mpeg,video/webm,video/ogg,video/mp2t,video/webm,"
    "video/x-msvideo,video/x-flv,application/font-woff,application/font-woff2,"
    "application/x-font-woff,application/x-font-woff2,application/vnd.ms-fontobject,"
    "application/font-sfnt,application/vnd.android.package-archive,binary/octet-stream,"
    "application/octet-stream,application/x-font-ttf,application/x-font-otf,video/webm,"
    "video/3gpp,application/font-ttf,audio/mp3,audio/x-wav,image/pjpeg,audio/basic,"
    "application/font-otf,application/x-ms-application,application/x-msdownload,"
    "video/x-ms-wmv,image/x-png,video/quicktime,image/x-ms-bmp,font/opentype,"
    "application/x-font-opentype,application/x-woff,audio/aiff,video/x-ms-asf,"
    "audio/x-ms-wma,audio/wma,application/x-mplayer2,image/avif"
)
_FILTER_URL = (
    ".css,.jpg,.jpeg,.png,.svg,.img,.gif,.mp4,.flv,.ogv,.webm,.webp,.mov,.mp3,.m4a,.m4p,"
    ".scss,.tif,.tiff,.ttf,.otf,.woff,.woff2,.bmp,.ico,.eot,.htc,.rtf,.swf,.image,/image,"
    "/img,/css,/wp-json,/wp-content,/wp-includes,/theme,/audio,/captcha,/font,node_modules,"
    "/jquery,/bootstrap,/_incapsula_resource,.wmv,.wma,.asx,.avif"
)
_FILTER_KEYWORDS = (
    "admin,login,logon,signin,signup,register,registration,dash,portal,ftp,panel,.js,api,"
    "robots.txt,graph,gql,config,backup,debug,db,database,git,cgi-bin,swagger,zip,.rar,"
    "tar.gz,internal,jira,jenkins,confluence,atlassian,okta,corp,upload,delete,email,sql,"
    "create,edit,test,temp,cache,wsdl,log,payment,setting,mail,file,redirect,chat,billing,"
    "doc,trace,ftp,gateway,import,proxy,dev,stage,stg,uat,sonar.ci.,.cp."
)
MATCH_CODE = ""

#: The filter settings, their defaults (waymore's) and checks; declared by the ``url_filter``
#: plugin, read by every source that filters server-side too.
FILTER_SETTINGS: dict[str, Setting] = {
    "FILTER_CODE": Setting(_FILTER_CODE, _check_codes, "statuses to drop (waymore's -fc)"),
    "FILTER_MIME": Setting(_FILTER_MIME, text_list, "mime types to drop"),
    "FILTER_URL": Setting(_FILTER_URL, text_list, "URL substrings to drop"),
    "FILTER_KEYWORDS": Setting(_FILTER_KEYWORDS, text_list, "the keywords of -a keywords_only=true"),
    "MATCH_CODE": Setting("", _check_codes, "statuses to keep, all others dropped (waymore's -mc)"),
    "MATCH_MIME": Setting("", text_list, "mime types to keep, all others dropped"),
}


@dataclass(frozen=True)
class FilterConfig:
    """The filters of one crawl. Empty lists mean "no such filter"."""

    enabled: bool = True
    filter_code: tuple[str, ...] = ()
    filter_mime: tuple[str, ...] = ()
    filter_url: tuple[str, ...] = ()
    filter_keywords: tuple[str, ...] = ()
    match_code: tuple[str, ...] = ()
    match_mime: tuple[str, ...] = ()
    keywords_only: bool = False
    from_date: str | None = None
    to_date: str | None = None
    _url_regex: re.Pattern[str] | None = field(default=None, compare=False, repr=False)
    _keyword_regex: re.Pattern[str] | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.filter_url:
            pattern = "|".join(re.escape(s) for s in self.filter_url)
            object.__setattr__(self, "_url_regex", re.compile(pattern, re.IGNORECASE))
        if self.keywords_only and self.filter_keywords:
            pattern = "|".join(re.escape(s) for s in self.filter_keywords)
            object.__setattr__(self, "_keyword_regex", re.compile(pattern, re.IGNORECASE))
        if self.from_date and self.to_date and self.from_date > self.to_date[: len(self.from_date)]:
            raise TrawlUsageError(f"from_date {self.from_date} is after to_date {self.to_date}")

    # --- server-side parts -------------------------------------------------------

    @property
    def server_codes(self) -> tuple[tuple[str, ...], bool]:
        """(codes, negate): the status filter to send, match form taking precedence."""
        if not self.enabled:
            return (), False
        if self.match_code:
            return self.match_code, False
        return self.filter_code, True

    @property
    def server_mimes(self) -> tuple[tuple[str, ...], bool]:
        if not self.enabled:
            return (), False
        if self.match_mime:
            return self.match_mime, False
        return self.filter_mime, True

    # --- client-side checks ------------------------------------------------------

    def url_allowed(self, url: str) -> bool:
        if not self.enabled:
            return True
        if self._url_regex is not None and self._url_regex.search(url):
            return False
        if self._keyword_regex is not None and not self._keyword_regex.search(url):
            return False
        return True

    def code_allowed(self, code: str) -> bool:
        if not self.enabled or not code:
            return True
        if self.match_code:
            return code in self.match_code
        return code not in self.filter_code

    def mime_allowed(self, mime: str) -> bool:
        if not self.enabled or not mime:
            return True
        if self.match_mime:
            return mime in self.match_mime
        if not self.filter_mime:
            return True
        # waymore drops revisit records with any mime filter: they repeat a capture.
        return mime != "warc/revisit" and mime not in self.filter_mime

    def date_allowed(self, timestamp: str) -> bool:
        """Inclusive at both ends: ``to_date=2020`` keeps all of 2020 (as CDX does)."""
        if self.from_date and timestamp[: len(self.from_date)] < self.from_date:
            return False
        if self.to_date and timestamp[: len(self.to_date)] > self.to_date:
            return False
        return True

    @property
    def checks_urls(self) -> bool:
        return self.enabled and (self._url_regex is not None or self._keyword_regex is not None)


def _lookup(source: Mapping[str, object], name: str) -> object | None:
    """Case-insensitive key lookup: ``-a filter_code=`` and ``FILTER_CODE:`` both work."""
    for key, value in source.items():
        if key.upper() == name:
            return value
    return None


def load_config_file(path: str) -> dict[str, object]:
    """Read a waymore ``config.yml``; unknown keys (API keys, webhooks) are ignored."""
    import yaml  # only a run given a config file pays for it

    file = Path(path).expanduser()
    try:
        data = yaml.safe_load(file.read_text(encoding="utf-8"))
    except OSError as exc:
        raise TrawlUsageError(f"cannot read config file {path!r}: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        first_line = str(exc).splitlines()[0] if str(exc) else "invalid YAML"
        raise TrawlUsageError(f"config file {path!r} is not valid YAML: {first_line}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise TrawlUsageError(f"config file {path!r} is not a mapping of NAME: value")
    return {str(k): v for k, v in data.items()}


def _layer_label(name: str, layer: object, settings: object, args: object, config_path: object) -> str:
    """How the user wrote a filter: ``-a filter_code=``, ``FILTER_CODE in config.yml``, ``FILTER_CODE``."""
    if layer is args:
        return f"-a {name.lower()}="
    if layer is not settings:
        return f"{name} in {config_path}"
    return name


def build_filter_config(settings: Mapping[str, object], args: Mapping[str, object]) -> FilterConfig:
    """Combine settings, an optional config file and spider arguments."""
    layers: list[Mapping[str, object]] = [settings]
    config_path = args.get("config")
    if config_path:
        layers.append(load_config_file(str(config_path)))
    layers.append(args)
    values: dict[str, list[str]] = {}
    for name in FILTER_NAMES:
        chosen: object | None = None
        where = name
        for layer in layers:
            found = _lookup(layer, name) if layer is not settings else read(settings, FILTER_SETTINGS, name)
            if found is not None:
                chosen = found
                where = _layer_label(name, layer, settings, args, config_path)
        if name in CODE_NAMES:
            check_status_codes(where, chosen)
        values[name] = list(dict.fromkeys(split_list(chosen)))  # waymore's lists repeat items
    enabled = parse_bool("filters", args.get("filters", True))
    keywords_only = parse_bool("keywords_only", args.get("keywords_only", False))
    return FilterConfig(
        enabled=enabled,
        filter_code=tuple(values["FILTER_CODE"]),
        filter_mime=tuple(values["FILTER_MIME"]),
        filter_url=tuple(values["FILTER_URL"]),
        filter_keywords=tuple(values["FILTER_KEYWORDS"]),
        match_code=tuple(values["MATCH_CODE"]),
        match_mime=tuple(values["MATCH_MIME"]),
        keywords_only=keywords_only,
        from_date=parse_date("from_date", args.get("from_date")),
        to_date=parse_date("to_date", args.get("to_date")),
    )
