"""Tuning projects: hone's own YAML format or A-Tune's server/client pair, in one model."""

from hone.project.load import load_project
from hone.project.model import Benchmark, Knob, Metric, Project, Tuning, Workload

__all__ = ["Benchmark", "Knob", "Metric", "Project", "Tuning", "Workload", "load_project"]
