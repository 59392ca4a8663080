"""``python -m invokit.cli``: the ``invokit`` command, for launchers that need an interpreter."""

from invokit.cli import main

main()
