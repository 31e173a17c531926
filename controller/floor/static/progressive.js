// A progressive link's meter, live: the sign over the pit and the progressive page both follow
// /api/progressive/<link>/events (server-sent events, one frame whenever the meter or its pending
// prizes change), as the floor map follows /api/events.
(function () {
  const holder = document.querySelector("[data-link]");
  const value = document.getElementById("meter-value");
  if (!holder || !value || !window.EventSource) return;
  const status = document.getElementById("meter-status");
  const pending = document.getElementById("sign-pending");
  // A sign opened by the sign key follows the meter by the same key (it holds no login).
  const key = holder.dataset.key ? "?key=" + encodeURIComponent(holder.dataset.key) : "";
  const source = new EventSource("/api/progressive/" + encodeURIComponent(holder.dataset.link) + "/events" + key);
  source.addEventListener("logout", function () {
    source.close();
    if (key) stale("Not live: the sign's key was refused (changed?); reload."); else location.href = "/login";
  });
  // Not live (PostgreSQL not answering, or the stream refused): the figure shown is the last one read,
  // and the screen says so rather than show a meter that only looks live.
  function stale(text) {
    status.textContent = text;
    status.hidden = false;
    holder.dataset.stale = "1";
  }
  source.addEventListener("unavailable", function (event) {
    stale("Not live: " + JSON.parse(event.data).error);
  });
  source.addEventListener("error", function () {
    if (source.readyState === EventSource.CLOSED) stale("Not live: the live meter was refused; reload.");
  });
  source.addEventListener("meter", function (event) {
    const data = JSON.parse(event.data);
    status.hidden = true;
    delete holder.dataset.stale;
    for (const shown of document.querySelectorAll(".live-meter")) shown.textContent = data.meter_text;
    value.textContent = data.meter_text;
    holder.dataset.meterCents = String(data.meter_cents);
    if (pending) {
      pending.replaceChildren();
      for (const p of data.pending) {
        const item = document.createElement("li");
        item.textContent = "Prize pending · table " + p.table_id + " · seat " + p.seat + " · " + p.award_text;
        pending.appendChild(item);
      }
    }
    holder.dataset.updated = String(Date.now());
  });
})();
