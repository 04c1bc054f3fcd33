"""python3 -m classify: see classify.cli."""

import sys

from classify.cli import main

if __name__ == "__main__":
    sys.exit(main())
