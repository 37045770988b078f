"""The one kind of error a command ends with on purpose: bad usage, or something the kit needs
that is missing (a toolchain, a catalog, a committed skeleton). Raised anywhere; cli.py turns
it into one line on standard error and exit status 2. Anything else that escapes is the
judge's own fault."""
from __future__ import annotations


class UsageError(Exception):
    """Bad usage or a missing requirement: exit status 2, the message on standard error."""
