"""runnerkit's version and the runner API version it speaks (the console serves /api/v1/)."""

__version__ = "1.2.0"
API_VERSION = "v1"
