// flushtable table panel: live updates from /api/events (SSE, id = journal seq) and operator actions.
// No framework and nothing from the internet: the server renders every fragment; this swaps them in.
(function () {
  "use strict";
  const csrf = document.querySelector('meta[name="csrf-token"]');
  const csrfToken = csrf ? csrf.content : "";
  const live = document.getElementById("live");
  const toast = document.getElementById("toast");
  let refreshTimer = null;

  function say(text, bad) {
    if (!toast) return;
    toast.textContent = text;
    toast.className = "toast show" + (bad ? " bad" : "");
    clearTimeout(say.timer);
    say.timer = setTimeout(() => { toast.className = "toast"; }, 4000);
  }

  // A fragment is swapped in only when it changed, and never under a finger: a button replaced
  // between its press and its release takes neither (the browser sends the click to their common
  // parent), so a tap during a refresh was lost. A swap held back by a press happens on release, or
  // once the press has lasted PRESS_HOLDS_MS: a tap is shorter, and a release that never comes (a
  // context menu, a switch to another window) must not freeze the page.
  const PRESS_HOLDS_MS = 2000;
  // "Changed" is judged on the HTML as the browser writes it back (innerHTML), a fetched fragment
  // parsed in a document of its own (inert: nothing in it loads or runs) to be compared. Each
  // fragment starts from what the page was loaded with: else the first refresh after a load swapped
  // every fragment, changed or not, and a box ticked on the page lost its tick.
  const inert = document.implementation.createHTMLDocument("");
  function written(el, html) {
    const probe = inert.createElement(el.tagName);
    probe.innerHTML = html;
    return probe.innerHTML.trim();
  }
  const shown = new WeakMap();  // partial element -> its HTML last swapped in (or loaded), as written
  for (const el of document.querySelectorAll("[data-partial]")) shown.set(el, el.innerHTML.trim());
  let pressed = null;  // the element the primary button or a finger is down on
  let pressedAt = 0;  // performance.now() at that press
  let holdTimer = null;  // a swap held by a press: the timer that ends the hold at PRESS_HOLDS_MS
  document.addEventListener("pointerdown", (event) => {
    if (event.isPrimary && event.button === 0) { pressed = event.target; pressedAt = performance.now(); }
  }, true);
  function released() {
    pressed = null;
    // After the click the release makes: that click runs its handler on the element it was made on.
    // The hold's timer goes with it: left to run, it ended a later press's hold early with a refresh
    // that, the later press held still, fetched the fragment for nothing.
    if (holdTimer !== null) { clearTimeout(holdTimer); holdTimer = null; setTimeout(scheduleRefresh, 0); }
  }
  document.addEventListener("pointerup", released, true);
  document.addEventListener("pointercancel", released, true);
  window.addEventListener("blur", released);
  function holdsSwap(el) {
    if (!pressed || !el.contains(pressed)) return false;
    const left = PRESS_HOLDS_MS - (performance.now() - pressedAt);
    if (left <= 0) return false;
    if (holdTimer === null) holdTimer = setTimeout(() => { holdTimer = null; scheduleRefresh(); }, left);
    return true;
  }

  // The alerts a supervisor ticked for a bulk acknowledge stay ticked through a swap of their fragment
  // (another alert raised, one acknowledged elsewhere): else the ticks went with every change, and the
  // bulk button said "Select the alerts first". "Select all" stays ticked only if every box still is.
  function keepPicks(el, picked) {
    if (!picked.size) return;
    const boxes = [...el.querySelectorAll("input[data-pick]")];
    for (const box of boxes) if (picked.has(box.dataset.pick)) box.checked = true;
    const all = el.querySelector("input[data-pick-all]");
    if (all) all.checked = boxes.length > 0 && boxes.every((box) => box.checked);
  }

  // One pass at a time: two passes at once could finish out of order, the older fragment swapped in
  // last, and the page stayed a change behind until the next entry. An entry during a pass makes one
  // more pass after it.
  let refreshing = false;
  let refreshAgain = false;
  async function refreshPartials() {
    refreshTimer = null;
    if (refreshing) { refreshAgain = true; return; }
    refreshing = true;
    refreshAgain = false;
    try {
      await refreshPass();
    } finally {
      refreshing = false;
      if (refreshAgain) scheduleRefresh();
    }
  }

  async function refreshPass() {
    for (const el of document.querySelectorAll("[data-partial]")) {
      const response = await fetch(el.dataset.partial, { credentials: "same-origin", cache: "no-store" });
      if (response.redirected || response.status === 401) { location.href = "/login"; return; }
      if (!response.ok) continue;
      const text = await response.text();
      const html = written(el, text);
      if (shown.get(el) === html) continue;
      if (holdsSwap(el)) continue;
      const picked = new Set([...el.querySelectorAll("input[data-pick]:checked")].map((box) => box.dataset.pick));
      el.innerHTML = text;
      shown.set(el, html);
      keepPicks(el, picked);
    }
    const table = await fetch("/api/table", { credentials: "same-origin", cache: "no-store" });
    if (table.ok) {
      const snap = await table.json();
      const count = document.getElementById("alert-count");
      if (count) { count.textContent = snap.active_alerts; count.classList.toggle("hot", snap.active_alerts > 0); }
      document.body.classList.toggle("held", !!snap.held);
    }
  }

  function scheduleRefresh() {
    if (refreshTimer === null) refreshTimer = setTimeout(refreshPartials, 60);
  }

  // A refusal in words: the server's detail (a sentence), or each field's complaint for a 422.
  function refusal(answer, status) {
    if (typeof answer.detail === "string") return "Refused: " + answer.detail;
    if (Array.isArray(answer.detail)) {
      return "Refused: " + answer.detail.map((d) => ((d.loc || []).slice(-1)[0] || "input") + ": " + d.msg).join("; ");
    }
    return "Refused (" + status + ")";
  }

  function text(value) { return value === null || value === undefined ? "" : String(value); }
  // A journal time (UTC) as a time of day in the property's zone, named, as the server writes it
  // (controller/locale.py time_text): the zone from the page's data-time-zone.
  function clock(time) {
    if (!time || !time.includes("T")) return "—";
    const zone = document.body.dataset.timeZone || "UTC";
    try {
      const options = { timeZone: zone, hour: "2-digit", minute: "2-digit", second: "2-digit", hourCycle: "h23",
                        timeZoneName: "short" };
      const parts = {};
      for (const part of new Intl.DateTimeFormat("en-GB", options).formatToParts(new Date(time))) parts[part.type] = part.value;
      return `${parts.hour}:${parts.minute}:${parts.second} ${parts.timeZoneName}`;
    } catch (error) {
      return time.split("T")[1].slice(0, 8) + " UTC";  // a browser without the zone's data
    }
  }

  function appendLogRow(entry) {
    const table = document.getElementById("log-table");
    if (!table) return;
    const kinds = table.dataset.kind ? table.dataset.kind.split(",") : [];
    if (kinds.length && !kinds.includes(entry.kind)) return;
    if (table.dataset.round && entry.round_id !== table.dataset.round) return;
    if (table.dataset.source && entry.source !== table.dataset.source) return;
    const row = document.createElement("tr");
    row.className = "fresh k-" + entry.kind;
    // The server's words for the time (the stream's time_text), as its own rows read; clock() only
    // for a stream without them.
    const when = entry.time_text || clock(entry.time_utc);
    for (const cell of [entry.seq, when, text(entry.round_id), entry.source]) {
      const td = document.createElement("td");
      td.textContent = text(cell);
      row.appendChild(td);
    }
    row.firstChild.className = "num";
    // The sentence (the server's one renderer), with the raw JSON one click away.
    const what = document.createElement("td");
    const sentence = document.createElement("span");
    sentence.className = "sentence";
    sentence.textContent = text(entry.sentence || entry.kind);
    const raw = document.createElement("details");
    raw.className = "raw";
    const summary = document.createElement("summary");
    summary.textContent = entry.kind + " (raw)";
    const pre = document.createElement("pre");
    pre.textContent = JSON.stringify(entry.payload);
    raw.append(summary, pre);
    what.append(sentence, raw);
    row.appendChild(what);
    const body = table.tBodies[0];
    body.insertBefore(row, body.firstChild);
    while (body.rows.length > 500) body.deleteRow(body.rows.length - 1);
  }

  function connect() {
    if (!window.EventSource || !document.querySelector("header.topbar")) return;
    const since = document.body.dataset.lastSeq || "";
    const source = new EventSource("/api/events" + (since ? "?since=" + encodeURIComponent(since) : ""));
    const readOnly = live && live.classList.contains("ro");
    source.addEventListener("open", () => { if (live && !readOnly) { live.textContent = "● live"; live.classList.remove("down"); } });
    source.addEventListener("error", () => { if (live && !readOnly) { live.textContent = "● reconnecting"; live.classList.add("down"); } });
    source.addEventListener("journal", (event) => {
      const entry = JSON.parse(event.data);
      document.body.dataset.lastSeq = String(entry.seq);
      appendLogRow(entry);
      scheduleRefresh();
    });
    source.addEventListener("reload", () => location.reload());
    source.addEventListener("logout", () => { source.close(); location.href = "/login"; });
  }

  // One dialog for every action: an input per field the action asks (controller/panel/actions.py).
  function ask(fields, confirmText) {
    return new Promise((resolve) => {
      const dialog = document.createElement("dialog");
      const form = document.createElement("form");
      form.method = "dialog";
      const question = document.createElement("p");
      question.textContent = confirmText || "";
      form.appendChild(question);
      const inputs = [];
      for (const field of fields) {
        const label = document.createElement("label");
        label.textContent = field.label;
        // A field with choices (the seats in the round) is picked from them, nothing else offered.
        const input = document.createElement(field.choices ? "select" : "input");
        input.name = field.name;
        input.required = true;
        if (field.choices) {
          for (const choice of field.choices) input.add(new Option(String(choice), String(choice)));
        } else input.type = field.type === "number" ? "number" : "text";
        if (field.min !== undefined && !field.choices) input.min = String(field.min);
        if (field.max !== undefined && !field.choices) input.max = String(field.max);
        if (field.maxlength !== undefined) input.maxLength = field.maxlength;
        label.appendChild(input);
        form.appendChild(label);
        inputs.push([field, input]);
      }
      const menu = document.createElement("menu");
      menu.innerHTML = "<button value='cancel' class='ghost' formnovalidate>Cancel</button><button value='ok' class='primary'>OK</button>";
      form.appendChild(menu);
      dialog.appendChild(form);
      document.body.appendChild(dialog);
      dialog.addEventListener("close", () => {
        let values = null;
        if (dialog.returnValue === "ok") {
          values = {};
          for (const [field, input] of inputs) {
            const raw = input.value.trim();
            values[field.name] = field.type === "number" ? Number(raw) : raw;
          }
        }
        dialog.remove();
        resolve(values);
      });
      dialog.showModal();
    });
  }

  // Several alerts at once, one reason for all (POST /api/alerts/bulk).
  document.addEventListener("change", (event) => {
    if (!event.target.matches("input[data-pick-all]")) return;
    for (const box of document.querySelectorAll("input[data-pick]")) box.checked = event.target.checked;
  });
  document.addEventListener("click", async (event) => {
    const bulk = event.target.closest("button[data-bulk]");
    if (!bulk) return;
    event.preventDefault();
    const ids = [...document.querySelectorAll("input[data-pick]:checked")].map((box) => box.dataset.pick);
    if (!ids.length) { say("Select the alerts first", true); return; }
    const clear = bulk.dataset.bulk === "clear";
    const values = await ask([{ name: "reason", label: "Reason, for all " + ids.length + " (journaled with your name)", type: "text", maxlength: 200 }],
      (clear ? "Acknowledge and clear " : "Acknowledge ") + ids.length + " alerts?");
    if (!values) return;
    const response = await fetch("/api/alerts/bulk", {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-CSRF-Token": csrfToken },
      body: JSON.stringify({ fault_ids: ids, reason: values.reason, clear: clear }),
    });
    const answer = await response.json().catch(() => ({}));
    if (response.ok) {
      const refused = Object.keys(answer.refused || {}).length;
      say("Acknowledged " + answer.acknowledged.length + (clear ? ", cleared " + answer.cleared.length : "") + (refused ? ", refused " + refused : ""), refused > 0);
    } else say(refusal(answer, response.status), true);
    scheduleRefresh();
  });

  document.addEventListener("click", async (event) => {
    const button = event.target.closest("button[data-action]");
    if (!button) return;
    event.preventDefault();
    const fields = JSON.parse(button.dataset.fields || "[]");
    let body = JSON.parse(button.dataset.fill || "{}");
    if (fields.length) {
      const values = await ask(fields, button.dataset.confirm);
      if (!values) return;
      body = Object.assign(body, values);
    } else if (button.dataset.confirm && !window.confirm(button.dataset.confirm)) {
      return;
    }
    button.disabled = true;
    try {
      const response = await fetch(button.dataset.action, {
        method: "POST",
        credentials: "same-origin",
        headers: { "Content-Type": "application/json", "X-CSRF-Token": csrfToken },
        body: JSON.stringify(body),
      });
      const answer = await response.json().catch(() => ({}));
      if (response.ok) say("Done: " + button.textContent.replace("…", ""));
      else say(refusal(answer, response.status), true);
    } finally {
      button.disabled = false;
      scheduleRefresh();
    }
  });

  // A printed dispute carries the time it was printed, in the property's zone as every time on the
  // panel (the page's data-time-zone); the zone's abbreviation is the server's, from the page's render.
  window.addEventListener("beforeprint", () => {
    const zone = document.body.dataset.timeZone || "UTC";
    const options = { timeZone: zone, year: "numeric", month: "2-digit", day: "2-digit", hour: "2-digit",
                      minute: "2-digit", second: "2-digit", hourCycle: "h23" };
    const parts = {};
    for (const part of new Intl.DateTimeFormat("en-CA", options).formatToParts(new Date())) parts[part.type] = part.value;
    const wall = `${parts.year}-${parts.month}-${parts.day} ${parts.hour}:${parts.minute}:${parts.second}`;
    for (const stamp of document.querySelectorAll("[data-print-time]")) {
      const abbreviation = stamp.textContent.trim().split(" ")[2] || zone;
      stamp.textContent = wall + " " + abbreviation;
    }
  });

  connect();
  // A linked progressive's meter and link state come from the floor's broadcast, not this table's
  // journal: its card is fetched again every 2 s even when no journal entry arrives.
  setInterval(() => { if (document.querySelector("#progressive[data-linked]")) scheduleRefresh(); }, 2000);
})();
