"""trawl's built-in plugins, one concern per module.

They implement the same hooks a third-party plugin does, nothing more, and are
registered in code (``trawl.pluginmanager.DEFAULT_PLUGINS``) rather than
through entry points, so no install metadata can lose them. Entry points are
for third-party packages.
"""
