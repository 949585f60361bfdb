"""The memory browser: a web UI at ``/ui`` of ``mem-pipeline serve`` to find, understand,
correct and erase what is remembered.

Where things are: ``routes.py`` (the shell, the static files, the HTML fragments under
``/ui/api/`` and the security headers), ``_views.py`` (Memories, a fact, Pending, Forget),
``_search.py`` (hits with their score parts, the prompt block), ``_graph.py`` (the concept
links as SVG), ``_html.py`` (escaping by construction), ``static/`` (the shell, its one
script and its stylesheet; no CDN, no build step).
"""

from .routes import CSP, mount_ui

__all__ = ["CSP", "mount_ui"]
