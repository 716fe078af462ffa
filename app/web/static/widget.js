/*
 * Bill Assistant chat widget: one file, no build step, no framework.
 *
 * Embed it on the bank's page with a customer session token from POST /v1/sessions
 * (asked for by the bank's backend; the page never holds an API key):
 *
 *   <div data-bill-assistant data-token="v1.…" data-locale="en"
 *        data-endpoint="https://assistant.bank.example"></div>
 *   <script src="https://assistant.bank.example/static/widget.js" defer></script>
 *
 * A chat: a transcript (role=log) of the customer's messages, the assistant's answers (each with the
 * statement facts it was answered from, which arrive first: a `facts` event, formatted by the server),
 * agents' replies and the service's notices. An answer's text streams in as `delta` events, a
 * `replace` event swaps in the verified answer, `final` is the answer as audited (with the choices of
 * a clarifying question, or the handover to an agent), `turn` gives the messages' numbers (or `error`,
 * in the customer's language, says the turn may not have been saved: asking again is safe). The
 * conversation's id is kept in sessionStorage (per customer), so a reload restores the transcript
 * (GET /v1/chat/conversations/{id}); its live feed (…/events, read with fetch: EventSource cannot send
 * the bearer token) brings an agent's replies as they are written. It renders in a shadow root, so
 * the page's styles and the widget's never mix.
 */
(() => {
  "use strict";

  const STYLE = `
    :host { display: block; max-width: 34rem; color: #1b1f24; font: 16px/1.5 system-ui, sans-serif; }
    * { box-sizing: border-box; }
    section { border: 1px solid #c9d1d9; border-radius: 12px; padding: 1rem; background: #fff; }
    .head { display: flex; align-items: center; justify-content: space-between; gap: .5rem; margin: 0 0 .5rem; }
    h2 { font-size: 1.15rem; margin: 0; }
    label { display: block; font-weight: 600; margin: .5rem 0 .25rem; }
    .account { display: flex; align-items: center; gap: .5rem; margin: 0 0 .5rem; }
    .account label { margin: 0; flex: none; }
    .account select { flex: 1; min-width: 0; padding: .3rem .5rem; }
    select, textarea { width: 100%; font: inherit; padding: .5rem; border: 1px solid #8c959f; border-radius: 8px; }
    textarea { min-height: 3.2rem; resize: vertical; }
    button { font: inherit; border-radius: 8px; cursor: pointer; min-height: 44px; }
    .head button { border: 1px solid #8c959f; background: #fff; padding: .2rem .7rem; font-size: .875rem; }
    .quick, .choices { display: flex; flex-wrap: wrap; gap: .4rem; margin: .5rem 0; }
    .sources { margin: .3rem 0 0; font-size: .85em; color: #57606a; }
    .quick button, .choices button { border: 1px solid #8c959f; background: #f6f8fa; padding: .3rem .7rem; text-align: left; }
    .choices button { border-color: #0b5cad; color: #0b5cad; background: #fff; }
    .send { display: flex; gap: .5rem; align-items: flex-end; }
    .send textarea { flex: 1; }
    button[type=submit] { border: 0; background: #0b5cad; color: #fff; padding: .5rem 1.2rem; font-weight: 600; }
    :focus-visible { outline: 3px solid #e8a317; outline-offset: 2px; }
    .log { max-height: min(65vh, 34rem); overflow-y: auto; display: flex; flex-direction: column; gap: .6rem;
           padding: .25rem .1rem; overscroll-behavior: contain; }
    .log:empty { display: none; }
    /* On a phone the page scrolls, not a box inside it: an answer and its statement table are read whole. */
    @media (max-width: 30rem), (max-height: 45rem) { .log { max-height: none; overflow-y: visible; } }
    .msg.assistant:has(table.facts) { max-width: 100%; }
    .log .earlier { align-self: center; border: 1px solid #8c959f; background: #f6f8fa; padding: .3rem .7rem; }
    .msg { max-width: 92%; padding: .55rem .8rem; border-radius: 12px; overflow-wrap: anywhere; }
    .msg.customer { align-self: flex-end; background: #0b5cad; color: #fff; border-bottom-right-radius: 4px; white-space: pre-wrap; }
    .msg.assistant { align-self: flex-start; background: #f3f5f8; border-bottom-left-radius: 4px; }
    .msg.agent { align-self: flex-start; background: #e6f4ea; border: 1px solid #9fd3ad; border-bottom-left-radius: 4px; white-space: pre-wrap; }
    .msg.system { align-self: center; max-width: 100%; background: none; color: #57606a; font-size: .875rem; text-align: center; padding: .1rem .5rem; }
    .who { display: block; font-size: .8rem; font-weight: 600; color: #116329; }
    .sr { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; }
    .answer { white-space: pre-wrap; }
    .typing { display: inline-flex; gap: 3px; padding: .2rem 0; }
    .typing span { width: 6px; height: 6px; border-radius: 50%; background: #8c959f; animation: blink 1.2s infinite; }
    .typing span:nth-child(2) { animation-delay: .2s; } .typing span:nth-child(3) { animation-delay: .4s; }
    @keyframes blink { 0%, 80%, 100% { opacity: .25; } 40% { opacity: 1; } }
    @media (prefers-reduced-motion: reduce) { .typing span { animation: none; } }
    .status { min-height: 1.5em; color: #57606a; margin: .4rem 0 0; font-size: .9rem; }
    .banner { border-left: 4px solid #bf8700; background: #fff8c5; padding: .5rem .75rem; margin: 0 0 .5rem; }
    .banner.agent { border-color: #1a7f37; background: #dafbe1; }
    .error { border-left: 4px solid #cf222e; background: #ffebe9; padding: .5rem .75rem; margin-top: .5rem; }
    details { margin-top: .5rem; }
    summary { cursor: pointer; color: #0b5cad; font-size: .9rem; min-height: 24px; }
    table { width: 100%; border-collapse: collapse; margin-top: .25rem; background: #fff; border-radius: 8px; }
    th, td { text-align: left; padding: .3rem .4rem; border-top: 1px solid #eaeef2; vertical-align: top; }
    th { font-weight: 500; color: #57606a; width: 45%; }
    td { font-variant-numeric: tabular-nums; overflow-wrap: anywhere; }
    ul { margin: 0; padding-left: 1.1rem; }
    .note { color: #57606a; font-size: .8rem; margin: .3rem 0 0; }
    [hidden] { display: none !important; }
  `;

  /* Every string the widget shows comes from the service: each locale's folder
     (prompts/locales/<locale>/words.json), loaded as a script (GET /v1/chat/words.js, which needs no
     CORS: a page the service does not serve can still be told so). Read once per page and endpoint. */
  const wordsFrom = new Map(); // endpoint -> Promise of the words
  const waiting = new Map(); // the words' script element -> its promise's resolve
  function loadWords(endpoint) {
    if (!wordsFrom.has(endpoint)) {
      wordsFrom.set(endpoint, new Promise((resolve) => {
        let pause = 500;
        const load = () => {
          const script = document.createElement("script");
          script.src = `${endpoint}/v1/chat/words.js`;
          waiting.set(script, resolve);
          script.onerror = () => { // offline: try again
            waiting.delete(script);
            script.remove();
            setTimeout(load, pause);
            pause = Math.min(pause * 2, 10000);
          };
          document.head.append(script);
        };
        load();
      }));
    }
    return wordsFrom.get(endpoint);
  }

  function receiveWords(script, all) {
    const resolve = waiting.get(script);
    waiting.delete(script);
    script?.remove();
    if (resolve) resolve(all);
  }

  /* The page's locale among those the service speaks: the same name, else the same language. */
  function pickLocale(requested, all) {
    const names = Object.keys(all.locales);
    for (const wanted of [requested, document.documentElement.lang, navigator.language]) {
      if (!wanted) continue;
      const exact = names.find((n) => n.toLowerCase() === wanted.toLowerCase());
      if (exact) return exact;
      const base = wanted.toLowerCase().split("-")[0];
      const same = names.find((n) => n.toLowerCase() === base) || names.find((n) => n.toLowerCase().split("-")[0] === base);
      if (same) return same;
    }
    return all.default;
  }

  function element(tag, attributes = {}, text = "") {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, value);
    if (text) node.textContent = text;
    return node;
  }

  /* Server-Sent Events over fetch (EventSource cannot POST or send a bearer token). */
  async function* readEvents(response) {
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += value.replace(/\r\n/g, "\n");
      let end;
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        let name = "message";
        const data = [];
        for (const line of block.split("\n")) {
          if (line.startsWith("event:")) name = line.slice(6).trim();
          else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
        }
        if (data.length) yield { name, data: JSON.parse(data.join("\n")) };
      }
    }
  }

  /* Where the conversation's id is kept: per tenant and customer (read from the token's payload,
     which is not secret), so that a reload with a fresh token finds it and another customer does not. */
  function storageKey(token) {
    try {
      const payload = token.split(".")[1].replace(/-/g, "+").replace(/_/g, "/");
      const claims = JSON.parse(atob(payload + "=".repeat((4 - (payload.length % 4)) % 4)));
      if (claims.customer_ref) return `bill-assistant:conversation:${claims.tenant_id}:${claims.customer_ref}`;
    } catch { /* not our token format: key by the token itself */ }
    return `bill-assistant:conversation:${token}`;
  }

  const store = {
    get(key) { try { return sessionStorage.getItem(key); } catch { return null; } },
    set(key, value) { try { sessionStorage.setItem(key, value); } catch { /* storage off: no restore */ } },
    drop(key) { try { sessionStorage.removeItem(key); } catch { /* idem */ } },
  };

  const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

  async function mount(host, options) {
    const endpoint = (options.endpoint || "").replace(/\/$/, "");
    const all = await loadWords(endpoint);
    if (host.shadowRoot) return; // mounted meanwhile
    // The conversation's language: the page's at first, each answer's once it comes (app/locales.py).
    const page = pickLocale(options.locale, all);
    let locale = page;
    let t = all.locales[locale].words;
    const auth = { Authorization: `Bearer ${options.token}` };
    const key = storageKey(options.token || "");
    const uid = `ba-${Math.random().toString(36).slice(2, 8)}`;

    const root = host.attachShadow({ mode: "open" });
    root.append(element("style", {}, STYLE));
    const section = element("section", { "aria-labelledby": `${uid}-title`, lang: locale });
    const head = element("div", { class: "head" });
    const restart = element("button", { type: "button", hidden: "" }, t.newConversation);
    const title = element("h2", { id: `${uid}-title` }, t.title);
    head.append(title, restart);

    const banner = element("div", { class: "banner", "aria-live": "polite", hidden: "" });
    const log = element("div", { class: "log", role: "log", "aria-live": "polite", "aria-label": t.conversation });
    const status = element("p", { class: "status", role: "status" });
    const error = element("div", { class: "error", role: "alert", hidden: "" });
    const quick = element("div", { class: "quick", role: "group", "aria-label": t.suggestions });

    const form = element("form", { novalidate: "" });
    const picker = element("div", { class: "account" });
    const select = element("select", { id: `${uid}-account`, name: "account" });
    const accountLabel = element("label", { for: select.id }, t.account);
    picker.append(accountLabel, select);
    const textarea = element("textarea", {
      id: `${uid}-question`, name: "question", maxlength: "1000", rows: "2", placeholder: t.placeholder,
      "aria-describedby": `${uid}-keys`,
    });
    const submit = element("button", { type: "submit" }, t.ask);
    const send = element("div", { class: "send" });
    send.append(textarea, submit);
    const questionLabel = element("label", { for: textarea.id }, t.question);
    const keys = element("span", { id: `${uid}-keys`, class: "sr" }, t.keys);
    form.append(questionLabel, send, keys);
    section.append(head, picker, banner, log, status, error, quick, form);
    root.append(section);

    // The conversation as this page knows it.
    let conversationId = null;
    let state = "bot"; // bot | waiting | agent
    let agentName = null;
    const bySeq = new Map(); // message number -> its element: a message is shown once
    let lastSeq = 0;
    let inFlight = null; // the question being answered: {controller, mine, reply}
    let deferred = []; // the feed's copies of this page's own turn, until the turn's numbers are known
    let feed = null; // AbortController of the live feed
    let accountsReady = null;
    let quickKind = null; // the quick questions shown: "suggested", "followUps" or none

    /* Says everything in `next`'s words from now on: a conversation speaks its latest answer's language. */
    function speak(next) {
      if (!next || next === locale || !all.locales[next]) return;
      locale = next;
      t = all.locales[locale].words;
      section.lang = locale;
      title.textContent = t.title;
      restart.textContent = t.newConversation;
      log.setAttribute("aria-label", t.conversation);
      quick.setAttribute("aria-label", t.suggestions);
      accountLabel.textContent = t.account;
      questionLabel.textContent = t.question;
      keys.textContent = t.keys;
      submit.textContent = t.ask;
      earlierButton.textContent = t.earlier;
      for (const who of log.querySelectorAll(".msg.customer > .who")) who.textContent = `${t.you}: `;
      for (const who of log.querySelectorAll(".msg.assistant > .who")) who.textContent = `${t.assistant}: `;
      for (const region of log.querySelectorAll(".answer[role=region]")) region.setAttribute("aria-label", t.answer);
      for (const group of log.querySelectorAll(".choices")) group.setAttribute("aria-label", t.choices);
      setState(state);
      setQuick(quickKind);
    }

    /* ---------- the transcript ---------- */

    function scrollDown(force) {
      const near = log.scrollHeight - log.scrollTop - log.clientHeight < 80;
      if (force || near) log.scrollTop = log.scrollHeight;
    }

    function known(seq, node) {
      if (!seq) return;
      node.dataset.seq = seq;
      bySeq.set(seq, node);
      lastSeq = Math.max(lastSeq, seq);
    }

    function bubble(role, label) {
      const node = element("article", { class: `msg ${role}` });
      if (label) node.append(element("span", { class: role === "agent" ? "who" : "who sr" }, label));
      return node;
    }

    function addCustomer(text, seq) {
      const node = bubble("customer", `${t.you}: `);
      node.append(text);
      known(seq, node);
      log.append(node);
      scrollDown(true);
      return node;
    }

    function addNotice(text, seq) {
      const node = bubble("system");
      node.textContent = text;
      known(seq, node);
      log.append(node);
      scrollDown();
    }

    function addAgent(text, name, seq) {
      const node = bubble("agent", name || t.agent);
      node.append(text);
      known(seq, node);
      log.append(node);
      scrollDown();
    }

    /* An assistant's message: its answer (the one latest answer is the region named "Answer"),
       the facts it was answered from, and the choices of a clarifying question. */
    function addAssistant() {
      for (const old of log.querySelectorAll(".answer[role=region]")) {
        old.removeAttribute("role");
        old.removeAttribute("aria-label");
      }
      for (const old of log.querySelectorAll("details[open]")) old.open = false;
      const node = bubble("assistant", `${t.assistant}: `);
      const answer = element("div", { class: "answer", role: "region", "aria-label": t.answer });
      const typing = element("span", { class: "typing", "aria-hidden": "true", hidden: "" });
      typing.append(element("span"), element("span"), element("span"));
      const note = element("p", { class: "note", hidden: "" });
      node.append(answer, typing, note);
      log.append(node);
      scrollDown(true);
      return { node, answer, typing, note };
    }

    function factsTable(facts) {
      const d = facts.display;
      const ft = all.locales[facts.locale]?.words || t; // labelled in the answer's language
      const details = element("details", { open: "", lang: facts.locale || locale });
      details.append(element("summary", {}, ft.caption));
      const table = element("table", { class: "facts", "aria-label": ft.caption });
      const body = element("tbody");
      const rows = [
        ["current", ft.current, d.current], ["previous", ft.previous, d.previous],
        ["difference", ft.difference, d.difference], ["minimum_due", ft.minimum, d.minimum_due],
        ["due_date", ft.due, d.due_date], ["status", ft.status, d.status],
      ];
      for (const [field, label, value] of rows) {
        const row = element("tr");
        row.append(element("th", { scope: "row" }, label), element("td", { "data-field": field }, value));
        body.append(row);
      }
      if (d.drivers && d.drivers.length) {
        const list = element("ul");
        for (const driver of d.drivers) list.append(element("li", { "data-amount": driver.amount }, `${driver.label}: ${driver.amount}`));
        const row = element("tr");
        const cell = element("td", { "data-field": "drivers" });
        cell.append(list);
        row.append(element("th", { scope: "row" }, ft.drivers), cell);
        body.append(row);
      }
      table.append(body);
      details.append(table);
      // Opened again, the table is brought into the chat's view, not left cut off below it.
      details.addEventListener("toggle", () => { if (details.open) details.scrollIntoView({ block: "nearest" }); });
      return details;
    }

    function showFacts(reply, facts) {
      if (!facts || !facts.display) return;
      reply.node.querySelector("details")?.remove();
      if (facts.locale) reply.node.lang = facts.locale;
      reply.node.append(factsTable(facts));
    }

    function showChoices(reply, choices) {
      const group = element("div", { class: "choices", role: "group", "aria-label": t.choices });
      for (const label of choices) {
        const button = element("button", { type: "button" }, label);
        button.addEventListener("click", () => { ask(label); textarea.focus({ preventScroll: true }); });
        group.append(button);
      }
      reply.node.append(group);
    }

    /* The bank's help articles the answer quotes, by title, under it. */
    function showSources(reply, sources) {
      reply.node.querySelector(".sources")?.remove();
      if (!sources?.length) return;
      const note = element("p", { class: "sources" }, `${t.sources}: ${sources.map((s) => s.title).join("; ")}`);
      reply.answer.after(note);
    }

    function finishAssistant(reply, { text, choices, facts, handover, sources }) {
      reply.answer.textContent = text.trim();
      showSources(reply, sources ?? facts?.sources);
      reply.typing.hidden = true;
      reply.answer.setAttribute("aria-busy", "false");
      // A clarifying question or a handover notice is no answer: no facts beside it.
      if (choices?.length || handover) reply.node.querySelector("details")?.remove();
      else if (facts) showFacts(reply, facts);
      if (choices?.length) showChoices(reply, choices);
    }

    /* A message from the server (the restored transcript, the live feed): shown once. */
    function showMessage(m) {
      if (bySeq.has(m.seq)) return;
      if (m.role === "customer") {
        // This page's own message, written before its number was known.
        const mine = [...log.querySelectorAll(".msg.customer:not([data-seq])")]
          .find((node) => node.lastChild && node.lastChild.textContent === m.text);
        if (mine) known(m.seq, mine);
        else addCustomer(m.text, m.seq);
      } else if (m.role === "assistant") {
        speak(m.locale || m.facts?.locale);
        const reply = addAssistant();
        finishAssistant(reply, { text: m.text, choices: m.choices, facts: m.facts });
        known(m.seq, reply.node);
      } else if (m.role === "agent") {
        addAgent(m.text, m.agent_name || agentName, m.seq);
        if (!inFlight) status.textContent = "";
      } else {
        addNotice(m.text, m.seq);
      }
      if (m.account_ref && [...select.options].some((o) => o.value === m.account_ref)) select.value = m.account_ref;
    }

    /* ---------- the conversation's state ---------- */

    function setQuick(kind) {
      quickKind = kind;
      const questions = kind ? t[kind] : [];
      quick.replaceChildren();
      for (const question of questions) {
        const button = element("button", { type: "button" }, question);
        button.addEventListener("click", () => { ask(question); textarea.focus({ preventScroll: true }); });
        quick.append(button);
      }
      quick.hidden = !questions.length;
    }

    function setState(next, name, writing = false) {
      const changed = next !== state;
      state = next;
      if (name !== undefined) agentName = name;
      if (state === "waiting") {
        banner.textContent = t.waiting;
        banner.className = "banner";
        banner.hidden = false;
      } else if (state === "agent") {
        banner.textContent = t.withAgent.replace("{name}", agentName || t.someAgent);
        banner.className = "banner agent";
        banner.hidden = false;
      } else {
        banner.hidden = true;
        banner.textContent = "";
      }
      if (changed && state !== "bot") status.textContent = ""; // handed to a person: no answer's status
      // While the agent types a reply the status line says so; it clears when they stop or send.
      const typing = t.agentWriting.replace("{name}", agentName || t.someAgent);
      if (state === "agent" && writing) status.textContent = typing;
      else if (status.textContent === typing) status.textContent = "";
      textarea.placeholder = state === "bot" ? t.placeholder : t.placeholderAgent;
      if (changed) setQuick(state !== "bot" ? null : bySeq.size ? "followUps" : "suggested");
    }

    /* The conversation's id (a new one's is in the first event of its first answer; the
       conversation exists once that turn is recorded, and its feed is opened then). */
    function adopt(id) {
      restart.hidden = false;
      if (id === conversationId) return;
      if (feed) feed.abort();
      feed = null;
      conversationId = id;
      store.set(key, id);
    }

    function reset() {
      if (inFlight) inFlight.controller.abort();
      forget();
      bySeq.clear();
      lastSeq = 0;
      deferred = [];
      log.replaceChildren();
      status.textContent = "";
      error.hidden = true;
      restart.hidden = true;
      setState("bot", null);
      setQuick("suggested");
    }

    /* ---------- the live feed: agents' replies, notices, status ---------- */

    function fromFeed(m) {
      if (bySeq.has(m.seq)) return;
      // This page's own turn is shown from its answer stream; the feed's copy waits for its numbers.
      if (inFlight && (m.role === "assistant" || m.role === "customer")) deferred.push(m);
      else showMessage(m);
    }

    function flushDeferred() {
      const waiting = deferred;
      deferred = [];
      for (const m of waiting.sort((a, b) => a.seq - b.seq)) showMessage(m);
    }

    async function openFeed() {
      if (feed || !conversationId) return; // open already
      const controller = new AbortController();
      feed = controller;
      const id = conversationId;
      let pause = 500;
      while (feed === controller && conversationId === id) {
        try {
          const response = await fetch(`${endpoint}/v1/chat/conversations/${id}/events?after=${lastSeq}`, {
            headers: { ...auth, Accept: "text/event-stream" }, signal: controller.signal,
          });
          if (response.status === 404 || response.status === 401) { // gone, or the session ended
            if (feed === controller) feed = null;
            return;
          }
          if (response.ok) {
            for await (const event of readEvents(response)) {
              pause = 500;
              if (event.name === "status") setState(event.data.status, event.data.agent_name, event.data.agent_writing);
              else if (event.name === "message") fromFeed(event.data);
            }
          }
        } catch {
          if (controller.signal.aborted) return;
        }
        await sleep(pause); // the feed ended (it does every few minutes) or failed: open it again
        pause = Math.min(pause * 2, 10000);
      }
    }

    /* A restored transcript is its latest page; earlier pages are put above it on request. */
    const earlierButton = element("button", { type: "button", class: "earlier", hidden: "" }, t.earlier);
    let earlierBefore = null;
    earlierButton.addEventListener("click", async () => {
      if (!earlierBefore || !conversationId) return;
      const url = `${endpoint}/v1/chat/conversations/${encodeURIComponent(conversationId)}?before=${earlierBefore}`;
      try {
        const response = await fetch(url, { headers: auth });
        if (!response.ok) return showError(await refusal(response));
        const page = await response.json();
        const top = earlierButton.nextSibling;
        const from = log.childElementCount;
        log.setAttribute("aria-live", "off");
        for (const m of page.messages) showMessage(m); // appended, then moved above what was shown
        for (const node of [...log.children].slice(from)) log.insertBefore(node, top);
        setTimeout(() => log.setAttribute("aria-live", "polite"), 0);
        showEarlier(page.earlier);
      } catch {
        showError(t.network);
      }
    });

    function showEarlier(before) {
      earlierBefore = before ?? null;
      earlierButton.hidden = !earlierBefore;
      if (earlierBefore) log.prepend(earlierButton);
    }

    async function restore() {
      const id = store.get(key);
      if (!id) return;
      try {
        const response = await fetch(`${endpoint}/v1/chat/conversations/${encodeURIComponent(id)}`, { headers: auth });
        if (response.status === 404) return store.drop(key); // purged or not this customer's: start afresh
        if (!response.ok) return;
        const conversation = await response.json();
        await accountsReady;
        if (conversationId || inFlight || log.childElementCount) return; // the customer was quicker
        log.setAttribute("aria-live", "off"); // the restored transcript is not read out again
        for (const m of conversation.messages) showMessage(m);
        showEarlier(conversation.earlier);
        setTimeout(() => log.setAttribute("aria-live", "polite"), 0);
        setQuick(null);
        const last = conversation.messages[conversation.messages.length - 1];
        setState(conversation.status, conversation.agent_name);
        if (conversation.status === "bot") {
          setQuick(last && last.role === "assistant" && last.choices?.length ? null : bySeq.size ? "followUps" : "suggested");
        }
        scrollDown(true);
        adopt(conversation.conversation_id || id);
        openFeed();
      } catch { /* offline: the page starts afresh; the accounts' error says so */ }
    }

    /* ---------- asking ---------- */

    function showError(message) {
      error.textContent = message;
      error.hidden = false;
      status.textContent = "";
    }

    async function refusal(response) {
      let body = {};
      try { body = await response.json(); } catch { /* not JSON: a proxy's page */ }
      const wait = body.retry_after_s || Number(response.headers.get("Retry-After")) || 5;
      switch (response.status) {
        case 401: return t.expired;
        case 404: return t.notFound;
        case 429: // the bank's rate, or a conversation's own caps (messages to a person in a row)
          return (body.error === "too_many_messages" ? t.tooManyMessages : t.rateLimited).replace("{s}", wait);
        case 503: return t.busy.replace("{s}", wait);
        case 400: case 422: return t.invalid; // the service's reason is in English, for developers
        default: return t.failed;
      }
    }

    function forget() { // the stored conversation is gone: the next question starts a new one
      if (feed) feed.abort();
      feed = null;
      conversationId = null;
      store.drop(key);
    }

    async function ask(question, retried = false) {
      if (inFlight) { // closing the old stream stops its model request too
        inFlight.controller.abort();
        inFlight.reply?.node.remove();
      }
      const controller = new AbortController();
      const toAgent = state !== "bot";
      const mine = addCustomer(question);
      const reply = toAgent ? null : addAssistant();
      const turn = { controller, mine, reply };
      inFlight = turn;
      error.hidden = true;
      if (reply) {
        reply.typing.hidden = false;
        reply.answer.setAttribute("aria-busy", "true");
        log.setAttribute("aria-busy", "true");
        status.textContent = t.loading;
      } else {
        status.textContent = "";
      }
      let finished = false;
      let started = false;
      try {
        const body = { account_ref: select.value, question, locale, page_locale: page };
        if (conversationId) body.conversation_id = conversationId;
        const response = await fetch(`${endpoint}/v1/chat`, {
          method: "POST",
          headers: { ...auth, "Content-Type": "application/json", Accept: "text/event-stream" },
          body: JSON.stringify(body),
          signal: controller.signal,
        });
        if (!response.ok) { // not taken: the question goes back into the box
          mine.remove();
          reply?.node.remove();
          if (response.status === 404 && body.conversation_id && !retried) {
            forget(); // purged since (or another customer's): ask again in a new conversation
            inFlight = null;
            return ask(question, true);
          }
          if (!textarea.value) textarea.value = question;
          return showError(await refusal(response));
        }
        let final = null;
        let told = false; // an `error` event explained the end of the stream
        for await (const { name, data } of readEvents(response)) {
          started = true;
          if (name === "conversation") {
            adopt(data.conversation_id);
            if (data.status !== state) setState(data.status);
          } else if (name === "error") { // the answer was not saved, or its turn not recorded: say so
            showError(data.message || t.failed);
            told = true;
          } else if (!reply) {
            if (name === "turn") {
              known(data.customer_seq, mine);
              openFeed();
              finished = true;
              status.textContent = t.delivered;
              if (data.status && data.status !== state) setState(data.status);
            }
          } else if (name === "facts") {
            speak(data.locale);
            showFacts(reply, data);
            status.textContent = t.writing;
          } else if (name === "delta") {
            reply.answer.append(data.text);
            scrollDown();
          } else if (name === "replace") {
            // "Replaced" only where a draft the answer does not go on from was shown; otherwise it
            // says plainly where the answer is from.
            const shown = reply.answer.textContent.trim();
            reply.answer.textContent = data.text;
            reply.note.textContent = shown && !data.text.startsWith(shown) ? t.replaced : t.answered;
            reply.note.hidden = false;
          } else if (name === "final") {
            final = data;
            finished = true;
            speak(data.locale);
            finishAssistant(reply, {
              text: data.explanation, choices: data.choices, handover: data.handover, sources: data.sources,
            });
            reply.answer.dataset.source = data.source;
            reply.answer.dataset.answerId = data.answer_id;
            if (!reply.note.textContent && data.source !== "fallback") reply.note.textContent = t.checked;
            reply.note.hidden = !reply.note.textContent || Boolean(data.choices?.length || data.handover);
            if (data.locale) reply.node.lang = data.locale;
            // The feed may have said a person has it before this stream's end came: no answer's status then.
            status.textContent = state === "bot" ? t.ready : "";
            scrollDown();
          } else if (name === "turn") {
            known(data.customer_seq, mine);
            known(data.assistant_seq, reply.node);
            openFeed();
            if (data.status && data.status !== state) setState(data.status);
          }
        }
        if (told && !finished) { // said why above: what was shown stays, nothing more is coming
          if (reply) reply.typing.hidden = true;
          status.textContent = "";
          return;
        }
        if (!finished) throw new TypeError("the stream ended before its final event");
        if (reply && state === "bot") setQuick(final?.choices?.length ? null : "followUps");
      } catch (exc) {
        if (controller.signal.aborted) return; // replaced by a newer question, or a new conversation
        if (!started) mine.remove();
        reply?.node.remove();
        showError(exc instanceof TypeError ? t.network : t.failed);
      } finally {
        if (inFlight === turn) {
          inFlight = null;
          log.setAttribute("aria-busy", "false");
          if (reply) reply.typing.hidden = true;
          flushDeferred();
        }
      }
    }

    form.addEventListener("submit", (event) => {
      event.preventDefault();
      const question = textarea.value.trim();
      if (!question) {
        textarea.focus();
        return;
      }
      textarea.value = "";
      ask(question);
    });

    // Enter sends, Shift+Enter starts a new line (and Enter that ends an input method's composition
    // — typing Chinese — only ends it).
    textarea.addEventListener("keydown", (event) => {
      if (event.key !== "Enter" || event.shiftKey || event.isComposing || event.keyCode === 229) return;
      event.preventDefault();
      form.requestSubmit();
    });

    restart.addEventListener("click", () => { reset(); textarea.focus(); });

    setQuick("suggested");
    accountsReady = (async () => {
      try {
        const response = await fetch(`${endpoint}/v1/chat/accounts`, { headers: auth });
        if (!response.ok) return showError(await refusal(response));
        const accounts = await response.json();
        if (!accounts.length) return showError(t.noAccounts);
        for (const a of accounts) {
          select.append(element("option", { value: a.account_ref }, `${a.masked_number} · ${a.currency}`));
        }
      } catch {
        showError(t.network);
      }
    })();
    restore();
  }

  function mountAll() {
    for (const host of document.querySelectorAll("[data-bill-assistant]")) {
      if (host.shadowRoot) continue;
      mount(host, { token: host.dataset.token, endpoint: host.dataset.endpoint, locale: host.dataset.locale });
    }
  }

  window.BillAssistant = { mount, readEvents, words: receiveWords }; // the console's page reads its stream with readEvents too
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", mountAll);
  else mountAll();
})();
