"""trawl's search language: parser, syntax tree and field names; each store translates the tree."""
