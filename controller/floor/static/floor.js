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
  // Each tile's words come made from the server (controller/floor/tiles.py): the page shows them as
  // they are, so times and amounts are written one way, in the property's zone and currency.
  const PARTS = ["id", "pit", "game", "phase", "state", "reason", "shift", "hold", "heard", "last", "clock", "software"];
  source.addEventListener("floor", function (event) {
    const data = JSON.parse(event.data);
    status.hidden = true;
    delete map.dataset.stale;
    // The table panel's badge: the count always, hot (red) while any alert is open.
    count.textContent = String(data.alerts || 0);
    count.classList.toggle("hot", Boolean(data.alerts));
    for (const t of data.tables) {
      let tile = map.querySelector('a[data-table="' + CSS.escape(t.table_id) + '"]');
      if (!tile) {
        // A table the page has no tile for: in its laid-out place if the page has one (heard for the
        // first time), else with the tables placed nowhere.
        tile = document.createElement("a");
        tile.dataset.table = t.table_id;
        tile.href = "/tables/" + encodeURIComponent(t.table_id);
        for (const part of PARTS) {
          const span = document.createElement("span");
          span.className = part;
          tile.appendChild(span);
        }
        const waiting = map.querySelector('.tile.missing[data-table="' + CSS.escape(t.table_id) + '"]');
        if (waiting) {
          tile.style.cssText = waiting.style.cssText;
          waiting.replaceWith(tile);
        } else {
          let rest = map.querySelector("section.pit:last-child .map:not(.laid-out)");
          if (!rest) {
            const section = document.createElement("section");
            section.className = "pit card";
            rest = document.createElement("div");
            rest.className = "map";
            section.appendChild(rest);
            map.appendChild(section);
          }
          rest.appendChild(tile);
        }
      }
      tile.className = "tile " + (t.quarantined ? "quarantined" : t.held ? "held" : t.alerts ? "alerting" : "");
      const text = {
        id: t.table_id, pit: t.pit || "", game: t.game_title, phase: t.phase_text, state: t.state,
        reason: t.hold_reason || "", shift: t.shift_text, hold: t.hold_text,
        heard: "heard " + t.last_heard_text + (t.last_heard_at ? " · " + t.last_heard_at : ""),
        last: t.last_round_id || "—", clock: clockText(t),
        software: (t.software || "software not verified") + (t.software_check ? " · check: " + t.software_check : ""),
      };
      for (const part of PARTS) tile.querySelector("." + part).textContent = text[part];
      tile.querySelector(".heard").title = t.last_heard_at || "";
    }
    map.dataset.updated = String(Date.now());
  });
})();
