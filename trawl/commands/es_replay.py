"""Where the ``es-replay`` entry point points; the command is :mod:`trawl.hyphenated_commands.es_replay`.

Its class is defined there so that Scrapy, which lists every command class
*defined* in a ``COMMANDS_MODULE`` module under the module's name, does not
list it a second time as ``es_replay``.
"""

from trawl.hyphenated_commands.es_replay import Command

__all__ = ["Command"]
