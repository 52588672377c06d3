"""Strata for Python: the API of rocksdict (``Rdict`` and friends) over the
Strata storage engine. Code written for rocksdict runs by changing
``from rocksdict import ...`` to ``from strata import ...``.
"""

from ._strata import *  # noqa: F401,F403
from ._strata import __all__  # noqa: F401
