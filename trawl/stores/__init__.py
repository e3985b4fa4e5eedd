"""Stores: where URL records live across runs.

``contract`` declares what a store is (``typing.Protocol``s, one per
capability); ``registry`` finds the store class a ``STORE_URI`` names among
the classes plugins register with ``trawl_register_stores``. Each built-in
store is a subpackage (``sqlite/``, ``elasticsearch/``) registered the same way
a third-party store is.
"""
