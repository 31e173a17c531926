// The floor map, live: /api/events sends the whole map whenever it changes (server-sent events).
(function () {
  const map = document.getElementById("floor-map");
  const count = document.getElementById("alert-count");
  if (!map || !window.EventSource) return;
  const source = new EventSource("/api/events");
  // A tile's clock: the table's last offset from the floor's time source (panel.py clock_text).
  function clockText(t) {
    if (t.clock_offset_us === null || t.clock_offset_us === undefined) {
      return t.clock_measured_utc ? "clock: unread" : "clock: not measured";
    }
    const seconds = t.clock_offset_us / 1000000;
    return "clock " + (seconds >= 0 ? "+" : "") + seconds.toFixed(3) + " s" + (t.clock_within_bound ? "" : " PAST BOUND");
  }
  // The session ended (idle, its 12 hours, or a logout in another tab): the stream says so and stops.
  source.addEventListener("logout", function () { source.close(); location.href = "/login"; });
  const status = document.getElementById("floor-status");
  // PostgreSQL not answering: the map below is the last one read; it goes live again by itself.
  source.addEventListener("unavailable", function (event) {
    status.textContent = "Not live: " + JSON.parse(event.data).error;
    status.hidden = false;
    map.dataset.stale = "1";
  });
  // Refused outright (429: this login's streams are all open in other tabs), the browser does not try
  // again: say so rather than show a map that only looks live. (No session is not this: it is said on a
  // 200 stream, event: logout, and the page goes to the login.)
  source.addEventListener("error", function () {
    if (source.readyState !== EventSource.CLOSED) return; // a dropped stream: the browser reconnects
    status.textContent = "Not live: the live map was refused (too many open tabs of this login?); close one and reload.";
    status.hidden = false;
    map.dataset.stale = "1";
  });
  source.addEventListener("floor", function (event) {
    const data = JSON.parse(event.data);
    status.hidden = true;
    delete map.dataset.stale;
    count.textContent = data.alerts ? String(data.alerts) : "";
    const seen = new Set();
    for (const t of data.tables) {
      seen.add(t.table_id);
      let tile = map.querySelector('[data-table="' + CSS.escape(t.table_id) + '"]');
      if (!tile) {
        tile = document.createElement("a");
        tile.dataset.table = t.table_id;
        tile.href = "/rounds?table=" + encodeURIComponent(t.table_id);
        for (const part of ["id", "pit", "game", "phase", "state", "last", "software", "clock"]) {
          const span = document.createElement("span");
          span.className = part;
          tile.appendChild(span);
        }
        map.appendChild(tile);
      }
      const state = t.quarantined ? "quarantined" : t.held ? "held" : t.alerts ? t.alerts + " alert(s)" : "ok";
      tile.className = "tile " + (t.quarantined ? "quarantined" : t.held ? "held" : t.alerts ? "alerting" : "");
      tile.querySelector(".id").textContent = t.table_id;
      tile.querySelector(".pit").textContent = t.pit || "";
      tile.querySelector(".game").textContent = t.game || "";
      tile.querySelector(".phase").textContent = t.phase || "";
      tile.querySelector(".state").textContent = state;
      tile.querySelector(".last").textContent = t.last_round_id || "—";
      tile.querySelector(".software").textContent =
        (t.software || "software not verified") + (t.software_check ? " · check: " + t.software_check : "");
      tile.querySelector(".clock").textContent = clockText(t);
    }
    map.dataset.updated = String(Date.now());
  });
})();
