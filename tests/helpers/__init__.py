"""Helpers shared by the test modules (servers live in ``tests/servers``).

Test modules import what they share from here, never from one another.
"""
