"""The applications over the engine: the command line, the HTTP settings service and the demo."""
