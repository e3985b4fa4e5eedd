"""For ``scrapyd-deploy`` only: it builds the egg with ``setup.py bdist_egg``.

Everything (name, packages, the ``scrapy`` entry point scrapyd reads the settings
module from) is in ``pyproject.toml``; without this file scrapyd-deploy would write
one of its own into the project, packaging ``tests`` as well. See docs/scrapyd.md.
"""

from setuptools import setup

setup()
