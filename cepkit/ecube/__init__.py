"""E-Cube: many queries over one concept hierarchy, evaluated together ([LIU] ch. 4).

``ECube(queries, hierarchy)`` builds the lattice of concept and pattern refinements (``.graph``), plans
the cheapest evaluation order by a minimum spanning arborescence over the cost model (``.plan()``),
evaluates it with general-to-specific and specific-to-general reuse (``.run(events)``), and answers
drill-down / roll-up from the kept results; ``.stream()`` runs it over an endless stream in micro-batches
(``StreamingCube``). ``docs/ecube.md`` explains the choices.
"""

from .cost import CostModel, Statistics, UnitCosts
from .cube import ECube
from .lattice import Refinement, lattice, refinement
from .operations import concept_drill_down, concept_roll_up, pattern_drill_down, pattern_roll_up
from .plan import ROOT, Plan, Step, chase
from .shape import Item, Shape, shape_of
from .streaming import StreamingCube

__all__ = [
    "ECube",
    "StreamingCube",
    "Plan",
    "Step",
    "chase",
    "ROOT",
    "Statistics",
    "UnitCosts",
    "CostModel",
    "Refinement",
    "refinement",
    "lattice",
    "Shape",
    "Item",
    "shape_of",
    "concept_drill_down",
    "concept_roll_up",
    "pattern_drill_down",
    "pattern_roll_up",
]
