"""Knob actuators: how hone reads and writes one setting of the system.

Each kind of setting (sysctl, sysfs, a shell get/set pair, a key in a config file, a flag or an
environment variable of a process hone starts) is one module with one `Actuator` subclass,
registered under its `kind`. Adding a kind of knob means adding one file here."""

from hone.knobs.base import Actuator, actuator_from_spec, actuator_kinds, register

__all__ = ["Actuator", "actuator_from_spec", "actuator_kinds", "register"]
