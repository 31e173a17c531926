"""The panel's routers, one per area: pages, the table API, actions, auth and the live stream."""
