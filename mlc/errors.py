"""The base of every error mlc's tools print without a traceback.

Kept free of imports so that the runtime's CUDA layer can use it without loading xDSL.
"""


class MlcError(Exception):
    """An error meant for the user: tools print its message, never a traceback."""
