"""Secret patterns (only when the user asks: ``-a secrets=true``), each with the line it is on.

Every rule is a regex over the file's text; a match is a :class:`Secret` with the rule's
name. Precision first: each pattern anchors on a vendor prefix or a fixed shape, and
the generic rule needs a secret-sounding name *and* an entropy threshold.

=====================  ==========================================================
rule                   what matches
=====================  ==========================================================
aws-access-key-id      ``AKIA``/``ASIA``/``ABIA``/``ACCA`` + 16 upper-case letters or digits
aws-secret-key         ``aws_secret_access_key``-like name = 40 base64 characters
github-token           ``ghp_``/``gho_``/``ghu_``/``ghs_``/``ghr_`` + 36+; ``github_pat_`` + 82
slack-token            ``xoxb-``/``xoxp-``/``xoxa-``/``xoxr-``/``xoxs-`` + 10+
slack-webhook          ``https://hooks.slack.com/services/T.../B.../...``
google-api-key         ``AIza`` + 35
stripe-secret-key      ``sk_live_``/``sk_test_``/``rk_live_``/``rk_test_`` + 24+ (``pk_`` keys are
                       public by design and not reported)
sendgrid-api-key       ``SG.`` + 22 + ``.`` + 43
twilio-api-key         ``SK`` + 32 hex
mailgun-api-key        ``key-`` + 32 hex
private-key            a ``-----BEGIN ... PRIVATE KEY-----`` block (up to its END line)
jwt                    three base64url parts, the first two starting ``eyJ`` (a JSON object)
generic-secret         a name with secret, token, password/passwd, api_key, access_key,
                       client_secret or auth in it, ``=`` or ``:``, then a quoted value of 16+
                       characters with letters and digits and at least
                       :data:`MIN_ENTROPY` bits of Shannon entropy per character
=====================  ==========================================================

Dropped as decoys: any value holding ``EXAMPLE``, ``example``, ``xxxx``, ``XXXX``, ``0000000``,
``your``/``YOUR``, ``<``, ``${``, ``{{`` or ``process.env`` (documentation placeholders, templates).
"""

from __future__ import annotations

import math
import re
from collections import Counter

from trawl.mining.findings import Secret
from trawl.mining.resolve import Lines

#: Bits per character a generic-secret value needs: random base64 is about 5-6, English about 4,
#: ``changeme-changeme`` 2.8. 3.5 keeps hex keys (up to 4) and refuses words and repeats.
MIN_ENTROPY = 3.5

RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("aws-access-key-id", re.compile(r"\b((?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16})\b")),
    (
        "aws-secret-key",
        re.compile(r"(?i)aws.{0,20}?secret.{0,20}?[\"'`]?\s*[:=]\s*[\"'`]([A-Za-z0-9/+]{40})[\"'`]"),
    ),
    ("github-token", re.compile(r"\b(gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{82})\b")),
    ("slack-token", re.compile(r"\b(xox[abprs]-[A-Za-z0-9-]{10,250})\b")),
    (
        "slack-webhook",
        re.compile(r"(https://hooks\.slack\.com/services/T[A-Z0-9]{6,}/B[A-Z0-9]{6,}/[A-Za-z0-9]{20,})"),
    ),
    ("google-api-key", re.compile(r"\b(AIza[0-9A-Za-z_\-]{35})(?![0-9A-Za-z_\-])")),
    ("stripe-secret-key", re.compile(r"\b((?:sk|rk)_(?:live|test)_[0-9A-Za-z]{24,247})\b")),
    ("sendgrid-api-key", re.compile(r"\b(SG\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43})(?![A-Za-z0-9_\-])")),
    ("twilio-api-key", re.compile(r"\b(SK[0-9a-f]{32})\b")),
    ("mailgun-api-key", re.compile(r"\b(key-[0-9a-f]{32})\b")),
    (
        "private-key",
        re.compile(
            r"(-----BEGIN (?:RSA |EC |DSA |OPENSSH |PGP |ENCRYPTED )?PRIVATE KEY(?: BLOCK)?-----"
            r"(?:[\s\S]{0,16384}?-----END [A-Z ]{0,30}PRIVATE KEY(?: BLOCK)?-----)?)"
        ),
    ),
    ("jwt", re.compile(r"\b(eyJ[A-Za-z0-9_\-]{8,4096}\.eyJ[A-Za-z0-9_\-]{8,8192}\.[A-Za-z0-9_\-]{16,2048})")),
    (
        "generic-secret",
        re.compile(
            r"(?i)(?:secret|token|passw(?:or)?d|api[_\-]?key|access[_\-]?key|auth)[\w.\-]{0,40}"
            r"[\"'`]?\s{0,4}[:=]{1,2}>?\s{0,4}[\"'`]([^\"'`\s]{16,512})[\"'`]"
        ),
    ),
)
#: Substrings a rule needs before its regex runs (``str.find`` is a memchr scan; a regex
#: starting with ``\b`` or a case-insensitive alternation tests every position): on a
#: 1 MB bundle without secrets this took the rules from 0.9 s to a few ms.
GATES: dict[str, tuple[str, ...]] = {
    "aws-access-key-id": ("AKIA", "ASIA", "ABIA", "ACCA"),
    "github-token": ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    "slack-token": ("xox",),
    "slack-webhook": ("hooks.slack.com",),
    "google-api-key": ("AIza",),
    "stripe-secret-key": ("sk_live_", "sk_test_", "rk_live_", "rk_test_"),
    "sendgrid-api-key": ("SG.",),
    "twilio-api-key": ("SK",),
    "mailgun-api-key": ("key-",),
    "private-key": ("-----BEGIN",),
    "jwt": ("eyJ",),
}
#: The words the two case-insensitive rules start with: their regex is tried only where one is.
KEYWORDS: dict[str, tuple[str, ...]] = {
    "aws-secret-key": ("aws",),
    "generic-secret": ("secret", "token", "passw", "api_key", "api-key", "apikey", "access", "auth"),
}
_DECOYS = re.compile(r"EXAMPLE|example|xxxx|XXXX|0000000|your|YOUR|<|\$\{|\{\{|process\.env")


def entropy(value: str) -> float:
    """Shannon entropy in bits per character."""
    counts = Counter(value)
    return -sum(n / len(value) * math.log2(n / len(value)) for n in counts.values())


def _generic_ok(value: str) -> bool:
    return (
        any(c.isdigit() for c in value) and any(c.isalpha() for c in value) and entropy(value) >= MIN_ENTROPY
    )


def _starts(lower: str, words: tuple[str, ...]) -> list[int]:
    """Offsets of every keyword in the lower-cased text, in order (``str.find``, not a regex scan)."""
    found = []
    for word in words:
        at = lower.find(word)
        while at != -1:
            found.append(at)
            at = lower.find(word, at + 1)
    return sorted(found)


def _matches(rule: str, pattern: re.Pattern[str], text: str, lower: str) -> list[re.Match[str]]:
    """The rule's matches: a scan for the vendor-prefixed rules, anchored tries at each keyword
    for the two rules that start with a case-insensitive word (scanning those tested every position)."""
    if rule in GATES:
        return list(pattern.finditer(text)) if any(gate in text for gate in GATES[rule]) else []
    if rule in KEYWORDS:
        matches, end = [], 0
        for at in _starts(lower, KEYWORDS[rule]):
            if at < end:
                continue
            match = pattern.match(text, at)
            if match:
                matches.append(match)
                end = match.end()
        return matches
    return list(pattern.finditer(text))


def find(text: str, source: str | None = None) -> list[Secret]:
    """Every rule's matches in ``text``, in order of position; one finding per value and line."""
    lower = text.lower()
    lines: Lines | None = None
    found: dict[tuple[str, int], Secret] = {}
    claimed: set[str] = set()
    for rule, pattern in RULES:
        for match in _matches(rule, pattern, text, lower):
            value = match.group(1)
            if _DECOYS.search(value) or value in claimed:
                continue
            if rule == "generic-secret" and not _generic_ok(value):
                continue
            lines = lines or Lines(text)
            line = lines.line(match.start(1))
            claimed.add(value)  # a GitHub token assigned to `token` is a github-token, not also generic
            found.setdefault((value, line), Secret(rule=rule, value=value, line=line, source=source))
    return sorted(found.values(), key=lambda s: (s.line, s.rule))
