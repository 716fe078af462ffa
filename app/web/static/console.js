/*
 * The console's one piece of JavaScript (a static file: the pages' CSP allows no inline script).
 * - The ask form streams its answer into the page (the same events as the chat widget, read with
 *   BillAssistant.readEvents from widget.js), then links to the audited answer's page. Without
 *   JavaScript the form posts and the answer page follows.
 * - The queue of waiting conversations refreshes itself and its waiting times tick.
 * - A conversation's transcript grows as messages are written (its Server-Sent Events feed).
 * Customers' words are only ever set as text, never as HTML.
 * Every word it says is the console locale's, which the page carries (base.html, data-words).
 */
"use strict";

const WORDS = JSON.parse(document.body.dataset.words);

/* One of the words with its {slots} filled: say("Account {ref}", { ref: "A-1" }). */
function say(text, slots) {
  return text.replace(/\{(\w+)\}/g, (slot, name) => (name in slots ? String(slots[name]) : slot));
}

/* A wait as people say it: the same words as the server's (conversation_views.waited). */
function waitedText(seconds) {
  const s = Math.max(0, Math.floor(seconds));
  const two = (n) => String(n).padStart(2, "0");
  if (s < 60) return say(WORDS.time.seconds, { s });
  if (s < 3600) return say(WORDS.time.minutes, { m: Math.floor(s / 60), s: two(s % 60) });
  return say(WORDS.time.hours, { h: Math.floor(s / 3600), m: two(Math.floor((s % 3600) / 60)) });
}

/* Every element with data-waiting-s counts up from it, by the browser's clock (no skew to the server's). */
function tickWaits() {
  const started = (cell) => {
    if (!cell.dataset.since) cell.dataset.since = String(Date.now() - Number(cell.dataset.waitingS) * 1000);
    return Number(cell.dataset.since);
  };
  const tick = () => {
    for (const cell of document.querySelectorAll("[data-waiting-s]")) {
      cell.textContent = waitedText((Date.now() - started(cell)) / 1000);
    }
  };
  tick();
  setInterval(tick, 1000);
}

(() => {
  const form = document.querySelector("form[data-stream]");
  if (!form || !window.BillAssistant) return;
  const live = document.getElementById("live");
  const status = document.getElementById("live-status");
  const answer = document.getElementById("live-answer");
  const note = document.getElementById("live-note");
  const details = document.getElementById("live-details");
  const submit = form.querySelector("button[type=submit]");

  const said = WORDS.script;

  function refused(response) {
    const s = response.headers.get("Retry-After") || said.a_few;
    const known = said[`refused_${response.status}`];  // 400, 403, 429, 503
    return known ? say(known, { s }) : say(said.refused, { status: response.status });
  }

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    live.hidden = false;
    answer.textContent = "";
    note.textContent = "";
    details.hidden = true;
    status.textContent = said.asking;
    submit.disabled = true;
    try {
      const response = await fetch(form.dataset.stream, {
        method: "POST",
        body: new URLSearchParams(new FormData(form)),
        headers: { Accept: "text/event-stream" },
      });
      if (!response.ok) {
        status.textContent = refused(response);
        return;
      }
      for await (const { name, data } of window.BillAssistant.readEvents(response)) {
        if (name === "facts") status.textContent = said.writing;
        else if (name === "delta") answer.append(data.text);
        else if (name === "replace") {
          answer.textContent = data.text;
          note.textContent = say(said.replaced, { reason: data.why });  // in the console's words
        } else if (name === "final") {
          answer.textContent = data.explanation;
          status.textContent = say(said.answered, { source: WORDS.source[data.source] || data.source });
        } else if (name === "error") { // shown, but never audited: the agent must not rely on it
          status.textContent = said.not_saved;
        } else if (name === "answer_page") {
          details.href = data.url;
          details.hidden = false;
        }
      }
    } catch {
      status.textContent = said.lost;
    } finally {
      submit.disabled = false;
    }
  });
})();

/*
 * The queue: asked for again every two seconds. Polling, not a stream: the queue is one cheap
 * indexed read per bank, any replica answers it, and an open page holds no connection between reads.
 * Rows are kept by conversation and moved only when the order changes, so a focused Take button stays focused.
 */
(() => {
  const body = document.getElementById("queue");
  if (!body) return;
  const template = document.getElementById("queue-row");
  const empty = document.getElementById("queue-empty");
  const status = document.getElementById("queue-status");

  function row(item) {
    let tr = body.querySelector(`tr[data-id="${item.id}"]`);
    if (!tr) {
      tr = template.content.firstElementChild.cloneNode(true);
      tr.dataset.id = item.id;
      const link = tr.querySelector("a.customer");
      link.href = item.url;
      link.textContent = item.customer_ref;
      tr.querySelector(".started .short").textContent = item.short;
      const started = tr.querySelector(".started time");
      started.dateTime = item.started_at;
      started.textContent = item.started;
      tr.querySelector("button .visually-hidden").textContent =
        say(template.dataset.take, { short: item.short, customer: item.customer_ref, started: item.started });
      tr.querySelector(".first").textContent = item.first_question;
      tr.querySelector(".first").lang = item.locale;
      tr.querySelector(".last").lang = item.locale;
      tr.querySelector(".language").textContent = item.language;
      tr.querySelector("form").action = `${item.url}/take`;
    }
    tr.querySelector(".reason").textContent = item.reason;
    tr.querySelector(".last").textContent = item.last_text;
    const lastAt = tr.querySelector(".last-at time");
    if (item.last_at) lastAt.dateTime = item.last_at;
    lastAt.textContent = item.last;
    const cell = tr.querySelector(".waited");
    cell.dataset.waitingS = String(item.waiting_s);
    cell.dataset.since = String(Date.now() - item.waiting_s * 1000);
    cell.textContent = waitedText(item.waiting_s);
    return tr;
  }

  async function refresh() {
    try {
      const response = await fetch(body.dataset.source, { headers: { Accept: "application/json" } });
      if (!response.ok || !response.headers.get("Content-Type")?.startsWith("application/json")) {
        status.textContent = WORDS.script.queue_signed_out;
        return;
      }
      const { waiting } = await response.json();
      const keep = new Set(waiting.map((item) => item.id));
      for (const tr of [...body.rows]) if (!keep.has(tr.dataset.id)) tr.remove();
      waiting.forEach((item, i) => {
        const tr = row(item);
        if (body.rows[i] !== tr) body.insertBefore(tr, body.rows[i] || null);
      });
      empty.hidden = waiting.length > 0;
      status.textContent = "";
    } catch {
      status.textContent = WORDS.script.queue_lost;
    }
  }

  tickWaits();
  setInterval(refresh, 2000);
})();

/*
 * A conversation: its feed (EventSource; the session cookie goes with it) appends each new message.
 * A stream that ends (the server closes it after ten minutes) or breaks is opened again from the
 * last message shown. A change of status or owner reloads the page, which then offers what the
 * agent may do now, unless the agent is typing a reply: then a notice says so.
 */
(() => {
  const list = document.getElementById("transcript");
  if (!list) return;
  const about = document.getElementById("about");
  const template = document.getElementById("message");
  let after = Number(list.dataset.after);

  const languages = JSON.parse(list.dataset.languages || "{}");

  function show(message) {
    if (message.seq <= after) return;  // already shown (a feed opened again)
    after = message.seq;
    const li = template.content.firstElementChild.cloneNode(true);
    const lang = message.locale || list.dataset.locale;  // the language it was written or answered in
    li.classList.add(message.role);
    li.dataset.seq = String(message.seq);
    li.querySelector(".who").textContent = (message.role === "agent" && message.agent_name) || WORDS.role[message.role];
    const time = li.querySelector("time");
    time.dateTime = message.created_at;
    time.textContent = new Date(message.created_at).toISOString().slice(11, 19);
    li.querySelector(".in").textContent = say(template.dataset.in, { language: languages[lang] || lang });
    const audit = message.audit_id || message.answer_id;  // this request's own row, even for a cached answer
    if (audit) {
      const link = document.createElement("a");
      link.className = "audit";
      link.href = `/console/answers/${audit}`;
      link.textContent = template.dataset.audited;
      const span = document.createElement("span");
      span.className = "link";
      span.append("· ", link);
      li.querySelector(".meta").append(" ", span);
    }
    const text = li.querySelector(".text");
    text.lang = lang;
    text.textContent = message.text;
    list.append(li);
  }

  let feed = null;
  let leaving = false;  // a form was sent: its answer, not a reload, is the next page
  document.addEventListener("submit", () => {
    leaving = true;
    feed?.close();
  });

  function changed(state) {
    if (leaving) return;
    if (state.status === about.dataset.status && (state.agent_name || "") === about.dataset.agentName) return;
    const reply = document.getElementById("text");
    if (!reply || !reply.value.trim()) window.location.reload();
    else document.getElementById("changed").hidden = false;
  }

  function open() {
    if (leaving) return;
    feed = new EventSource(`${list.dataset.events}?after=${after}`);
    feed.addEventListener("message", (event) => show(JSON.parse(event.data)));
    feed.addEventListener("status", (event) => changed(JSON.parse(event.data)));
    feed.addEventListener("error", () => {
      feed.close();
      setTimeout(open, 1000);
    });
  }

  // While the agent types a reply, the customer's widget says so: a mark renewed at most every
  // couple of seconds, which lapses on its own (app/conversations/service.py WRITING_S).
  const reply = document.getElementById("text");
  let marked = 0;
  reply?.addEventListener("input", () => {
    if (!reply.value.trim() || Date.now() - marked < 2000) return;
    marked = Date.now();
    const form = reply.form;
    const body = new URLSearchParams({ csrf_token: form.elements.csrf_token.value });
    fetch(form.action.replace(/\/messages$/, "/writing"), { method: "POST", body }).catch(() => {});
  });

  tickWaits();
  open();
})();
