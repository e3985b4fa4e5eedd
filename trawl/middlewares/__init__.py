"""Downloader middlewares, one concern per module (see the politeness work)."""
