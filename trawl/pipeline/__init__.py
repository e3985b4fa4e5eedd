"""The item pipeline: batches through the plugin hooks into the store (docs/architecture.md)."""
