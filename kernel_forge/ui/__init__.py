"""The inspection UI (`kforge ui`): a local web app over the job folders and the kernel cache."""

from .server import make_server, serve

__all__ = ["make_server", "serve"]
