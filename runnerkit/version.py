"""runnerkit's version and the runner API version it speaks (the console serves /api/v1/)."""

__version__ = "1.3.0"
API_VERSION = "v1"
