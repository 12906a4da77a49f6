"""Capture: observe one call in the VM and turn it into a graph, guards and a replay plan."""
from .observer import capture, Capture  # noqa: F401
