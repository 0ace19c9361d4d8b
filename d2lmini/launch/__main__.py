"""``python -m d2lmini.launch``: the command line (see ``__init__.py``)."""
import sys

from . import main

if __name__ == '__main__':
    sys.exit(main())
