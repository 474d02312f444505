"""The stored run: the transcript format, the live event log, the replay timeline and markers, importers."""
