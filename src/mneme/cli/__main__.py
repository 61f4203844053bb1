"""`python -m mneme.cli`: the same as the `mneme` script."""

from mneme.cli import main

main()
