"""Pages of the console, split by what they show: browsing and files."""
