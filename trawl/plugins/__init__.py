"""trawl's built-in plugins, one concern per module.

Each is registered through the ``trawl`` entry-point group in
``pyproject.toml``, exactly as a third-party plugin would be.
"""
