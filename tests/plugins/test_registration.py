"""The plugins' and the actions' packages register every concrete plugin and action they
hold, by name, and nothing else: a plugin written and left out of the list in
``scheduler_core/plugins/__init__.py`` would be refused by every configuration naming it."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from types import ModuleType

import scheduler_core.actions
import scheduler_core.plugins
from scheduler_core.framework.registry import Action, Plugin, action_builder, plugin_builder


def _modules(package: ModuleType) -> list[ModuleType]:
    found = [package]
    for info in pkgutil.walk_packages(package.__path__, prefix=f"{package.__name__}."):
        found.append(importlib.import_module(info.name))
    return found


def _concrete(package: ModuleType, base: type) -> set[type]:
    """Every class defined in the package's modules that subclasses ``base``, is not
    abstract and has a name of its own."""
    classes: set[type] = set()
    for module in _modules(package):
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if (
                cls.__module__ == module.__name__
                and issubclass(cls, base)
                and not inspect.isabstract(cls)
                and "name" in vars(cls)
            ):
                classes.add(cls)
    return classes


def test_every_concrete_plugin_in_the_package_is_registered_under_its_name() -> None:
    plugins = _concrete(scheduler_core.plugins, Plugin)
    assert {cls.name for cls in plugins} >= {"proportion", "gang", "predicates", "nodeorder"}
    for cls in plugins:
        assert plugin_builder(cls.name) is cls, f"{cls.__qualname__} is not registered"


def test_every_concrete_action_in_the_package_is_registered_under_its_name() -> None:
    actions = _concrete(scheduler_core.actions, Action)
    assert {cls.name for cls in actions} == {"enqueue", "allocate", "preempt", "reclaim"}
    for cls in actions:
        assert action_builder(cls.name) is cls, f"{cls.__qualname__} is not registered"
