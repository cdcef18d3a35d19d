# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Import-only placeholder for ``torchvision`` (llmserve CPU test installs).

SGLang's text-only serving path imports ``torchvision.transforms`` while it loads
its multimodal model configs, but never runs it.  The torchvision wheels on PyPI
are CUDA builds that do not load next to the CPU build of torch, so this package
takes their place.  Every submodule of ``torchvision`` can be imported and every
attribute can be looked up; calling or instantiating anything raises an error
that names this placeholder.  Do not use it where images are really processed.
"""

import importlib.abc
import importlib.machinery
import sys
import types

__version__ = "0.0.0+llmserve.importshim"

_MESSAGE = "torchvision is an import-only placeholder on this CPU-only SGLang install"


class _PlaceholderType(type):
    """Class-level attribute lookups (``InterpolationMode.BICUBIC``) give the placeholder again."""

    def __getattr__(cls, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return cls

    def __call__(cls, *args, **kwargs):
        raise RuntimeError("%s (tried to create %s)" % (_MESSAGE, cls.__qualname__))


class Placeholder(metaclass=_PlaceholderType):
    """Stands in for any torchvision class, function or constant."""


def _module_getattr(name):
    if name.startswith("__") and name.endswith("__"):
        raise AttributeError(name)
    return Placeholder


class _SubmoduleFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Creates an empty placeholder module for any ``torchvision.<x>`` import."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname.startswith(__name__ + "."):
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None

    def create_module(self, spec):
        module = types.ModuleType(spec.name, "torchvision placeholder submodule")
        module.__path__ = []
        module.__getattr__ = _module_getattr
        return module

    def exec_module(self, module):
        parent, _dot, child = module.__name__.rpartition(".")
        setattr(sys.modules[parent], child, module)


if not any(isinstance(finder, _SubmoduleFinder) for finder in sys.meta_path):
    sys.meta_path.append(_SubmoduleFinder())


def __getattr__(name):
    if name.startswith("__") and name.endswith("__"):
        raise AttributeError(name)
    # ``torchvision.transforms`` without an import statement: import the placeholder submodule.
    try:
        return importlib.import_module(__name__ + "." + name)
    except ImportError:  # pragma: no cover - the finder accepts every name
        return Placeholder
