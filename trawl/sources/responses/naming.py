"""File names for stored responses: content hash, per-host folder, never a path outside the store.

A stored file is ``<host folder>/<digest><.ext>``. Every part is rebuilt from
a small alphabet, never copied: the host from ``[a-z0-9.-]`` (anything else,
``..`` included, becomes ``_``), the digest from base32 or hex, the extension
from at most 8 letters and digits. So no URL, header or archive answer can
give a name with ``/``, ``\\``, ``..``, a NUL byte, a drive letter, a Windows
device name (``CON``, ``nul.txt``) or more than :data:`MAX_PART` bytes, and
:func:`checked_parts` refuses any relative path that has one anyway (a path
read back from an index that someone edited).
"""

from __future__ import annotations

import base64
import hashlib
import re
from urllib.parse import urlsplit

#: The longest folder or file name written (ext4, NTFS and most stores allow 255).
MAX_PART = 120
_HOST_CHARS = re.compile(r"[^a-z0-9.-]")
_BASE32_SHA1 = re.compile(r"[A-Z2-7]{32}")
_HEX_SHA1 = re.compile(r"[0-9a-f]{40}")
_EXTENSION = re.compile(r"\.([a-z0-9]{1,8})$")
#: Names Windows reserves in every folder, with any extension.
WINDOWS_DEVICES = frozenset(
    {"con", "prn", "aux", "nul", "conin$", "conout$"}
    | {f"com{i}" for i in range(10)}
    | {f"lpt{i}" for i in range(10)}
)
#: An extension for a file whose URL has none, by its type.
MIME_EXTENSIONS = {
    "application/javascript": "js",
    "text/javascript": "js",
    "application/x-javascript": "js",
    "application/json": "json",
    "text/html": "html",
    "text/xml": "xml",
    "application/xml": "xml",
    "text/plain": "txt",
    "text/css": "css",
}


def is_device_name(part: str) -> bool:
    """``CON``, ``nul.txt``, ``com1.js``: a name Windows opens as a device, not a file."""
    return part.split(".", 1)[0].lower().rstrip(" ") in WINDOWS_DEVICES


def host_folder(host: str | None) -> str:
    """The folder of one host's files: lower case, ``[a-z0-9.-]``, no leading dot, bounded."""
    name = _HOST_CHARS.sub("_", (host or "").lower()).strip(".")
    if not name or set(name) <= {"_", "."}:
        name = "_unknown"
    if is_device_name(name):
        name = "_" + name
    if len(name) > MAX_PART:
        tail = hashlib.sha1(name.encode()).hexdigest()[:12]
        name = f"{name[: MAX_PART - 13]}_{tail}"
    return name


def content_digest(data: bytes) -> str:
    """The Wayback Machine's digest of a payload: SHA-1, base32 (``YEIPJFLNQ4...``)."""
    return base64.b32encode(hashlib.sha1(data).digest()).decode("ascii")


def clean_digest(raw: str | None) -> str | None:
    """A CDX or WARC digest as a file name (base32 upper case, or hex lower case), else ``None``.

    ``sha1:`` (WARC) is dropped; anything that is not a SHA-1 in one of those
    two spellings is refused: the file is then named by the hash of its bytes.
    """
    if not raw:
        return None
    text = raw.strip()
    if text.lower().startswith("sha1:"):
        text = text[5:]
    if _BASE32_SHA1.fullmatch(text.upper()):
        return text.upper()
    if _HEX_SHA1.fullmatch(text.lower()):
        return text.lower()
    return None


def extension(url: str | None, mime: str | None) -> str:
    """``.js`` from the URL's path, else from the type, else nothing; letters and digits only."""
    try:
        path = urlsplit(url or "").path
    except ValueError:
        path = ""
    found = _EXTENSION.search(path.rsplit("/", 1)[-1].lower())
    if found:
        return "." + found.group(1)
    ext = MIME_EXTENSIONS.get((mime or "").split(";", 1)[0].strip().lower())
    return f".{ext}" if ext else ""


def file_path(host: str | None, digest: str, url: str | None = None, mime: str | None = None) -> str:
    """``<host folder>/<digest><.ext>``: where a response's bytes are stored, relative to the store."""
    clean = clean_digest(digest)
    if clean is None:
        raise ValueError(f"not a content digest: {digest!r}")
    return f"{host_folder(host)}/{clean}{extension(url, mime)}"


def checked_parts(path: str) -> list[str]:
    """The parts of a relative store path; ``ValueError`` for any that could leave the store."""
    if not path or "\x00" in path or "\\" in path or path.startswith("/") or ":" in path:
        raise ValueError(f"not a relative store path: {path!r}")
    parts = path.split("/")
    for part in parts:
        if part in ("", ".", "..") or len(part.encode()) > MAX_PART or is_device_name(part):
            raise ValueError(f"not a safe store path: {path!r}")
    return parts
