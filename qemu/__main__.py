import sys

from qemu.cli import main

sys.exit(main())
