import sys

if sys.argv[1:] == ["--version"]:  # answered before importing the command line and codecs
    from . import __version__
    print(f"potsherd {__version__}")
    sys.exit(0)

from .cli import main  # noqa: E402

sys.exit(main())
