"""Scrapy item pipelines. One drives every trawl plugin: see ``plugins.PluginPipeline``."""
