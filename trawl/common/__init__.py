"""What every package of trawl uses during a run: stats keys and counts, outcome words, ERROR-line
attribution, secrets masking, logs, stopping, files, paths and JOBDIR; it imports no source,
store or command (the orchestration of a run, which does, is trawl.run)."""
