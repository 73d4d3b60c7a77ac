"""`python -m mdmem`: the mdmem command line."""

from mdmem.cli import main

if __name__ == "__main__":
    main()
