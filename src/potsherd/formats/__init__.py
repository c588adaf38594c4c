"""Format families; each subpackage lists its codecs in ``CODECS``.

``potsherd.formats`` is both this package and the public function
``potsherd.formats()`` (the list of supported formats): importing a family
subpackage sets the package as an attribute of ``potsherd``, so the package
itself is made callable instead of letting it shadow the function.
"""
import sys
import types


class _CallableFormatsPackage(types.ModuleType):
    def __call__(self) -> list[dict]:
        from .. import list_formats
        return list_formats()


sys.modules[__name__].__class__ = _CallableFormatsPackage
