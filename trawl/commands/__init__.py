"""trawl's Scrapy commands (COMMANDS_MODULE). ``crawl`` here replaces Scrapy's."""
