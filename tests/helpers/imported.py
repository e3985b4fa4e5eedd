"""A trawl command run in a fresh interpreter, with the modules it imported read at its exit.

A fork server's children have everything imported already, so a test of what a command
imports runs it with ``python -c`` (:data:`RUN_AND_LIST_MODULES`).
"""

from __future__ import annotations

#: Run as ``python -c``: the command line, then every imported module's name in $MODULES_OUT.
RUN_AND_LIST_MODULES = """
import atexit, os, sys
atexit.register(lambda: open(os.environ["MODULES_OUT"], "w").write("\\n".join(sorted(sys.modules))))
from trawl.cli import main
main(sys.argv[1:])
"""
