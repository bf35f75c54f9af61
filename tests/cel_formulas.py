"""The formulas of [CEL] §2 (CEL's running example over the farm-sensor stream
``cepkit.datasets.cel_fire_sensors``), shared by every test that runs them."""

FIRE = "FILTER (x.tmp > 40 and y.hum < 25 and x.id = 0 and y.id = 0)"
PHI1 = f"(T AS x ; H AS y) {FIRE}"
PHI2 = f"((T AS x ; H AS y) OR (H AS y ; T AS x)) {FIRE}"
PHI3 = "(H AS x ; (T AS y FILTER y.id = 1)+ ; H AS z) FILTER (x.hum < 30 and z.hum > 60 and x.id = 1 and z.id = 1)"
PHI4 = "(H AS x ; (T AS y FILTER y.id = x.id)+ ; H AS z) FILTER (x.hum < 30 and z.hum > 60 and x.id = z.id)"
PHI5 = "T AS x ; ((T AS y FILTER x.tmp > 40) OR (H AS y FILTER x.tmp <= 40))"
# Figure 2's CEA accepts "CEs that begin and end with an H and contain some of the T events above 40";
# in CEL (which has + but no *): no T, or one or more.
FIGURE2 = "(H AS x ; H AS z) OR (H AS x ; (T AS y FILTER y.tmp > 40)+ ; H AS z)"
