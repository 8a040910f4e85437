"""English dates as the console shows them: ISO order, 24-hour clock (an audit trail is read
across countries; 12/03/2026 means two different days on two sides of the Atlantic)."""

DATETIME_FORMAT = "Y-m-d H:i:s"
SHORT_DATETIME_FORMAT = "Y-m-d H:i"
DATE_FORMAT = "j M Y"
SHORT_DATE_FORMAT = "Y-m-d"
TIME_FORMAT = "H:i:s"
