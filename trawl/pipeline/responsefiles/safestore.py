"""The local ``FILES_STORE``: Scrapy's folder store, made safe against what is already in the folder.

Scrapy's ``FSFilesStore`` joins the path to the folder and writes through
whatever is there: a symlink someone left in the folder (``example.com ->
/etc``) would take the file elsewhere. This store walks the path one folder
at a time with ``O_NOFOLLOW``/``O_DIRECTORY`` relative to the folder it
opened (no path is resolved twice, so nothing can be swapped in between),
refuses a part that is a symlink or not a folder, and writes the file under a
temporary name and renames it into place: a symlink where the file goes is
replaced, never followed, and a reader never sees half a file.
"""

from __future__ import annotations

import hashlib
import os
import secrets
from io import BytesIO
from pathlib import Path
from typing import Any

from scrapy.pipelines.files import FSFilesStore

from trawl.sources.responses.naming import checked_parts

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)


class UnsafePath(OSError):
    """A path the store will not write: outside the folder, or through a symlink."""


class FolderUnwritable(OSError):
    """The folder itself refuses writes (read-only, full, no permission): every later file would too."""


class SafeFSFilesStore(FSFilesStore):
    """``FILES_STORE`` as a local folder (or ``file://``), written without following links."""

    def __init__(self, basedir: str | os.PathLike[str]) -> None:
        super().__init__(basedir)
        self.root = Path(self.basedir)

    def _open_folder(self, parts: list[str], create: bool) -> int:
        """A descriptor of the folder ``parts`` names under the root; ``UnsafePath`` for a link."""
        fd = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
        try:
            for part in parts:
                if create:
                    try:
                        os.mkdir(part, 0o777, dir_fd=fd)
                    except FileExistsError:
                        pass
                    except OSError as exc:
                        raise self._unwritable(exc) from None
                try:
                    inner = os.open(part, _DIR_FLAGS, dir_fd=fd)
                except OSError as exc:
                    if create or not isinstance(exc, FileNotFoundError):
                        raise UnsafePath(
                            f"{part!r} in the files store is a symlink or not a folder"
                        ) from None
                    raise
                os.close(fd)
                fd = inner
        except BaseException:
            os.close(fd)
            raise
        return fd

    def write(self, path: str, data: bytes) -> None:
        """Write ``data`` to the relative ``path``, atomically, never through a symlink."""
        try:
            parts = checked_parts(path)
        except ValueError as exc:
            raise UnsafePath(str(exc)) from None
        folder = self._open_folder(parts[:-1], create=True)
        try:
            temporary = f".{parts[-1]}.{secrets.token_hex(4)}.part"
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
            try:
                handle = os.open(temporary, flags, 0o666, dir_fd=folder)
            except OSError as exc:
                raise self._unwritable(exc) from None
            try:
                with os.fdopen(handle, "wb", closefd=True) as out:
                    out.write(data)
                os.replace(temporary, parts[-1], src_dir_fd=folder, dst_dir_fd=folder)
            except BaseException as exc:
                try:
                    os.unlink(temporary, dir_fd=folder)
                except OSError:
                    pass
                if isinstance(exc, OSError) and not isinstance(exc, UnsafePath):
                    raise self._unwritable(exc) from None
                raise
        finally:
            os.close(folder)

    def _unwritable(self, exc: OSError) -> FolderUnwritable:
        return FolderUnwritable(exc.errno, f"cannot write to FILES_STORE {str(self.root)!r}: {exc.strerror}")

    def persist_file(
        self,
        path: str | os.PathLike[str],
        buf: BytesIO,
        info: Any,
        meta: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        self.write(str(path), buf.getvalue())

    def stat_file(self, path: str | os.PathLike[str], info: Any) -> dict[str, Any]:
        """``{}`` (download it) unless a regular file is there, reached without a link."""
        try:
            parts = checked_parts(str(path))
            folder = self._open_folder(parts[:-1], create=False)
        except (ValueError, OSError):
            return {}
        try:
            handle = os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW, dir_fd=folder)
        except OSError:
            return {}
        finally:
            os.close(folder)
        with os.fdopen(handle, "rb") as file:
            modified = os.fstat(file.fileno()).st_mtime
            checksum = hashlib.md5(file.read(), usedforsecurity=False).hexdigest()
        return {"last_modified": modified, "checksum": checksum}
