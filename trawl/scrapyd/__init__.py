"""Recurring schedules inside scrapyd: ``addschedule.json``, ``listschedules.json``, ``delschedule.json``.

scrapyd runs a job when asked and has no schedules of its own; its
maintainers send users to cron (scrapyd issues #297 and #453), and people run
ScrapydWeb beside it for its timer tasks: a second process, a second
database, and a cron line or ScrapydWeb task that knows nothing about whether
the last job is still running. trawl adds them to scrapyd itself, through the
two extension points scrapyd offers, so one scrapyd process serves
everything and a scrapyd.conf is all it takes (the project's own
``scrapyd.conf`` enables them, docs/schedules.md):

* ``application = trawl.scrapyd.app.application`` (:mod:`.app`): scrapyd's own
  application plus a Twisted timer service (:mod:`.service`) that queues each
  schedule's jobs through scrapyd's scheduler, as ``schedule.json`` does;
* ``[services]``: the three JSON endpoints (:mod:`.webservice`).

The schedules live in a SQLite file in scrapyd's ``dbs_dir`` (:mod:`.store`);
the timing rules (next run, missed runs, time zones) are :mod:`.schedules`.
"""
