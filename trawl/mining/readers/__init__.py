"""One reader per file type; :mod:`trawl.mining.extract` picks one.

``javascript`` (tree-sitter; ``jsvalues`` evaluates literals, ``jsuses`` knows the
calls and assignments jsluice knows), ``html`` (lxml), ``jsonkeys``, ``xml`` (lxml
with entities, DTDs and the network off), ``sourcemap``, ``fallback`` (regexes, for
files a parser cannot read and for unknown types).
"""
