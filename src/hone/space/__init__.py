"""The search space: what values each knob may take and which combinations are allowed."""

from hone.space.constraints import Constraint
from hone.space.domains import (
    Boolean,
    Categorical,
    Domain,
    FloatRange,
    IntRange,
    Ordinal,
    Value,
)
from hone.space.space import Config, SearchSpace

__all__ = [
    "Boolean",
    "Categorical",
    "Config",
    "Constraint",
    "Domain",
    "FloatRange",
    "IntRange",
    "Ordinal",
    "SearchSpace",
    "Value",
]
