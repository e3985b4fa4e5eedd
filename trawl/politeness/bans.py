"""Telling a ban from an empty answer.

A captcha, a WAF challenge or an "access denied" page served with status 200
is not data and not "no URLs": it means the upstream (or a proxy) refuses us.
The markers are the ones such pages carry in their first kilobytes.
"""

from __future__ import annotations

from scrapy.http import Response

BLOCK_MARKERS = (
    b"attention required! | cloudflare",
    b"cf-chl-",
    b"cf_chl_",
    b"challenge-platform",
    b"g-recaptcha",
    b"h-captcha",
    b"hcaptcha.com",
    b"captcha",
    b"access denied",
    b"request unsuccessful. incapsula",
    b"_incapsula_resource",
    b"the requested url was rejected",  # F5 / BIG-IP ASM
    b"you have been blocked",
    b"blocked site error",  # the Wayback Machine's exclusion
)


def block_reason(response: Response) -> str | None:
    """Why this answer looks like a block page, or ``None``."""
    head = response.body[:8192].lower()
    for marker in BLOCK_MARKERS:
        if marker in head:
            return marker.decode()
    return None
