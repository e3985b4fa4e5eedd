"""A run from start to end: crawl all, progress, logs, error attribution, outcome, summary, reports."""
