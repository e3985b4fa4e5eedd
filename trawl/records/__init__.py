"""Records: the batch types every stage passes on, canonical URLs, provenance and its merge rule."""
