"""The floor panel's routers, one an area (controller/floor/panel/app.py includes them)."""
