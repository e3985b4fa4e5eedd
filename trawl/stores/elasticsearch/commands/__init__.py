"""The Elasticsearch store's commands: ``trawl es-replay`` and ``trawl kibana-setup``.

Hyphenated names, so they live outside COMMANDS_MODULE and come in through the
``scrapy.commands`` entry points of pyproject.toml (``trawl -h`` lists each once).
"""
