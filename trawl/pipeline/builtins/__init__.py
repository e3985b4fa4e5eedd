"""trawl's built-in pipeline plugins, one concern per module: normalize, scope, filter, dedup."""
