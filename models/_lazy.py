"""Lazy exports for the packages of :mod:`scaleprobe.models` (:pep:`562`).

A package lists its public names and the submodule that defines each; a name is
imported the first time it is used. ``import scaleprobe.models`` therefore loads
neither scikit-learn, pandas, xarray, Dask nor matplotlib: the command line's
``--help`` and the light commands stay fast.

No exported name may equal a submodule's name: importing the submodule would bind
the module to that attribute of the package and hide the export
(``tests/models/test_structure.py`` checks it).

Examples
--------
>>> getattr_, dir_ = attach("json", {"JSONDecodeError": "decoder"})
>>> getattr_("JSONDecodeError").__name__
'JSONDecodeError'
>>> "JSONDecodeError" in dir_()
True
"""

from __future__ import annotations

import importlib


def attach(package, exports):
    """Module ``__getattr__`` and ``__dir__`` for lazy ``exports``.

    Parameters
    ----------
    package : str
        The package's ``__name__``.
    exports : dict of str to str
        Public name -> submodule (relative to ``package``, dotted) that defines it.

    Returns
    -------
    getattr_ : callable
        The package's ``__getattr__``: imports the submodule on first use and caches
        the value in the package's namespace.
    dir_ : callable
        The package's ``__dir__``: its namespace and every public name.
    """

    def getattr_(name):
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{module}"), name)
        setattr(importlib.import_module(package), name, value)
        return value

    def dir_():
        return sorted(set(vars(importlib.import_module(package))) | set(exports))

    return getattr_, dir_
