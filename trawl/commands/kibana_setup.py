"""Where the ``kibana-setup`` entry point points; the command is in :mod:`trawl.hyphenated_commands`.

Its class is defined there so that Scrapy, which lists every command class
*defined* in a ``COMMANDS_MODULE`` module under the module's name, does not
list it a second time as ``kibana_setup``.
"""

from trawl.hyphenated_commands.kibana_setup import Command

__all__ = ["Command"]
