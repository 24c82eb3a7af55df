import sys

from loadwise.cli import main

sys.exit(main())
