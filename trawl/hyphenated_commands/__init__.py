"""Scrapy commands whose names have a hyphen: ``es-replay``, ``kibana-setup``.

Scrapy names a ``COMMANDS_MODULE`` command after its module (``es_replay``) and
an entry-point command after its entry point (``es-replay``, pyproject's
``scrapy.commands`` group). Defined in ``trawl.commands``, each was listed
twice by ``scrapy -h``; defined here, outside ``COMMANDS_MODULE``, each is
listed once, under its hyphenated name. ``trawl.commands.es_replay`` and
``trawl.commands.kibana_setup`` re-export the classes so that the entry points
(and an install's metadata written before the move) keep resolving.
"""
