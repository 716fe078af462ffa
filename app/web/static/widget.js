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
 * The numbers arrive first (a `facts` event, formatted by the server) and are shown as a table;
 * the answer's text streams in as `delta` events; a `replace` event swaps in the verified answer;
 * `final` is the answer as audited. It renders in a shadow root, so the page's styles and the
 * widget's never mix.
 */
(() => {
  "use strict";

  const TEXT = {
    en: {
      title: "Questions about your bill",
      account: "Card",
      question: "Your question",
      placeholder: "For example: why is my bill higher than last month?",
      ask: "Ask",
      suggestions: "Suggested questions",
      suggested: [
        "Why is my bill higher than last month?",
        "Did my payment arrive?",
        "Why was I charged interest?",
      ],
      loading: "Looking at your statement…",
      writing: "Writing your answer…",
      ready: "Answer ready.",
      caption: "Your latest statement",
      current: "New balance",
      previous: "Previous balance",
      difference: "Change",
      minimum: "Minimum payment",
      due: "Due date",
      status: "Payment status",
      drivers: "What changed",
      answer: "Answer",
      checked: "Checked against your statement.",
      replaced: "We replaced the draft with an answer checked against your statement.",
      noAccounts: "We found no cards to ask about.",
      rateLimited: "You are asking faster than we can answer. Please try again in {s} seconds.",
      busy: "We are very busy right now. Please try again in {s} seconds.",
      expired: "Your session has expired. Please reload the page to continue.",
      network: "The connection was lost. Check your internet connection and try again.",
      notFound: "We could not find that card.",
      invalid: "Please check your question: {m}",
      failed: "Something went wrong on our side. Please try again.",
    },
    "zh-CN": {
      title: "账单问题",
      account: "卡片",
      question: "您的问题",
      placeholder: "例如：为什么这个月的账单比上个月高？",
      ask: "提问",
      suggestions: "常见问题",
      suggested: ["为什么这个月的账单比上个月高？", "我的还款到账了吗？", "为什么收了我利息？"],
      loading: "正在查看您的账单…",
      writing: "正在生成回答…",
      ready: "回答已完成。",
      caption: "您最近一期账单",
      current: "本期余额",
      previous: "上期余额",
      difference: "变化",
      minimum: "最低还款额",
      due: "到期还款日",
      status: "还款状态",
      drivers: "变化明细",
      answer: "回答",
      checked: "已与您的账单核对。",
      replaced: "我们已用与您账单核对过的回答替换了草稿。",
      noAccounts: "没有找到可查询的卡片。",
      rateLimited: "您的提问过于频繁，请在 {s} 秒后再试。",
      busy: "当前咨询量较大，请在 {s} 秒后再试。",
      expired: "您的会话已过期，请刷新页面后继续。",
      network: "网络连接已中断，请检查网络后重试。",
      notFound: "没有找到这张卡片。",
      invalid: "请检查您的问题：{m}",
      failed: "我们这边出了点问题，请稍后再试。",
    },
  };

  const STYLE = `
    :host { display: block; max-width: 34rem; color: #1b1f24; font: 16px/1.5 system-ui, sans-serif; }
    * { box-sizing: border-box; }
    section { border: 1px solid #c9d1d9; border-radius: 12px; padding: 1rem; background: #fff; }
    h2 { font-size: 1.15rem; margin: 0 0 .75rem; }
    label { display: block; font-weight: 600; margin: .5rem 0 .25rem; }
    select, textarea { width: 100%; font: inherit; padding: .5rem; border: 1px solid #8c959f; border-radius: 8px; }
    textarea { min-height: 4.5rem; resize: vertical; }
    .suggestions { display: flex; flex-wrap: wrap; gap: .4rem; margin: .6rem 0; }
    button { font: inherit; border-radius: 8px; cursor: pointer; min-height: 44px; }
    .suggestions button { border: 1px solid #8c959f; background: #f6f8fa; padding: .3rem .7rem; }
    button[type=submit] { border: 0; background: #0b5cad; color: #fff; padding: .5rem 1.4rem; font-weight: 600; }
    button:disabled { opacity: .6; cursor: progress; }
    :focus-visible { outline: 3px solid #e8a317; outline-offset: 2px; }
    .status { min-height: 1.5em; color: #57606a; margin: .5rem 0 0; }
    .error { border-left: 4px solid #cf222e; background: #ffebe9; padding: .5rem .75rem; margin-top: .75rem; }
    table { width: 100%; border-collapse: collapse; margin-top: .75rem; }
    caption { text-align: left; font-weight: 600; padding-bottom: .25rem; }
    th, td { text-align: left; padding: .3rem .25rem; border-top: 1px solid #eaeef2; vertical-align: top; }
    th { font-weight: 500; color: #57606a; width: 45%; }
    td { font-variant-numeric: tabular-nums; overflow-wrap: anywhere; }
    ul { margin: 0; padding-left: 1.1rem; }
    .answer { margin-top: .75rem; white-space: pre-wrap; overflow-wrap: anywhere; }
    .note { color: #57606a; font-size: .875rem; margin: .25rem 0 0; }
    [hidden] { display: none !important; }
  `;

  function pickLocale(requested) {
    const lang = (requested || document.documentElement.lang || navigator.language || "en").toLowerCase();
    return lang.startsWith("zh") ? "zh-CN" : "en";
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

  function mount(host, options) {
    const locale = pickLocale(options.locale);
    const t = TEXT[locale];
    const endpoint = (options.endpoint || "").replace(/\/$/, "");
    const auth = { Authorization: `Bearer ${options.token}` };
    const uid = `ba-${Math.random().toString(36).slice(2, 8)}`;

    const root = host.attachShadow({ mode: "open" });
    root.append(element("style", {}, STYLE));
    const section = element("section", { "aria-labelledby": `${uid}-title`, lang: locale });
    section.append(element("h2", { id: `${uid}-title` }, t.title));

    const form = element("form", { novalidate: "" });
    const select = element("select", { id: `${uid}-account`, name: "account" });
    const textarea = element("textarea", {
      id: `${uid}-question`, name: "question", maxlength: "1000", placeholder: t.placeholder,
    });
    const suggestions = element("div", { class: "suggestions", role: "group", "aria-label": t.suggestions });
    for (const question of t.suggested) {
      const button = element("button", { type: "button" }, question);
      button.addEventListener("click", () => {
        textarea.value = question;
        form.requestSubmit();
      });
      suggestions.append(button);
    }
    const submit = element("button", { type: "submit" }, t.ask);
    form.append(
      element("label", { for: select.id }, t.account), select,
      element("label", { for: textarea.id }, t.question), textarea,
      suggestions, submit,
    );

    const status = element("p", { class: "status", role: "status" });
    const error = element("div", { class: "error", role: "alert", hidden: "" });
    const table = element("table", { class: "facts", hidden: "" });
    const answer = element("div", { class: "answer", role: "region", "aria-label": t.answer, "aria-live": "polite" });
    const note = element("p", { class: "note" });
    section.append(form, status, error, table, answer, note);
    root.append(section);

    function showError(message) {
      error.textContent = message;
      error.hidden = false;
      status.textContent = "";
      answer.setAttribute("aria-busy", "false");
    }

    function showFacts(facts) {
      const d = facts.display;
      table.replaceChildren(element("caption", {}, t.caption));
      const body = element("tbody");
      const rows = [
        ["current", t.current, d.current], ["previous", t.previous, d.previous],
        ["difference", t.difference, d.difference], ["minimum_due", t.minimum, d.minimum_due],
        ["due_date", t.due, d.due_date], ["status", t.status, d.status],
      ];
      for (const [field, label, value] of rows) {
        const row = element("tr");
        row.append(element("th", { scope: "row" }, label), element("td", { "data-field": field }, value));
        body.append(row);
      }
      if (d.drivers.length) {
        const list = element("ul");
        for (const driver of d.drivers) list.append(element("li", { "data-amount": driver.amount }, `${driver.label}: ${driver.amount}`));
        const row = element("tr");
        const cell = element("td", { "data-field": "drivers" });
        cell.append(list);
        row.append(element("th", { scope: "row" }, t.drivers), cell);
        body.append(row);
      }
      table.append(body);
      table.hidden = false;
    }

    async function refusal(response) {
      let body = {};
      try { body = await response.json(); } catch { /* not JSON: a proxy's page */ }
      const wait = body.retry_after_s || Number(response.headers.get("Retry-After")) || 5;
      switch (response.status) {
        case 401: return t.expired;
        case 404: return t.notFound;
        case 429: return t.rateLimited.replace("{s}", wait);
        case 503: return t.busy.replace("{s}", wait);
        case 400: case 422: return t.invalid.replace("{m}", body.message || "");
        default: return t.failed;
      }
    }

    let inFlight = null;

    async function ask(question) {
      if (inFlight) inFlight.abort(); // closing the old stream stops its model request too
      const controller = new AbortController();
      inFlight = controller;
      error.hidden = true;
      note.textContent = "";
      answer.textContent = "";
      answer.setAttribute("aria-busy", "true");
      status.textContent = t.loading;
      submit.disabled = true;
      let finished = false;
      try {
        const response = await fetch(`${endpoint}/v1/chat`, {
          method: "POST",
          headers: { ...auth, "Content-Type": "application/json", Accept: "text/event-stream" },
          body: JSON.stringify({ account_ref: select.value, question, locale }),
          signal: controller.signal,
        });
        if (!response.ok) return showError(await refusal(response));
        for await (const event of readEvents(response)) {
          if (event.name === "facts") {
            showFacts(event.data);
            status.textContent = t.writing;
          } else if (event.name === "delta") {
            answer.append(event.data.text);
          } else if (event.name === "replace") {
            answer.textContent = event.data.text;
            note.textContent = t.replaced;
          } else if (event.name === "final") {
            finished = true;
            answer.textContent = event.data.explanation;
            answer.dataset.source = event.data.source;
            answer.dataset.answerId = event.data.answer_id;
            if (!note.textContent && event.data.source !== "fallback") note.textContent = t.checked;
            answer.setAttribute("aria-busy", "false");
            status.textContent = t.ready;
          }
        }
        if (!finished) showError(t.network); // the stream ended before its final event
      } catch (exc) {
        if (controller.signal.aborted) return; // replaced by a newer question
        showError(exc instanceof TypeError ? t.network : t.failed);
      } finally {
        if (inFlight === controller) {
          inFlight = null;
          submit.disabled = false;
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
      ask(question);
    });

    (async () => {
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
  }

  function mountAll() {
    for (const host of document.querySelectorAll("[data-bill-assistant]")) {
      if (host.shadowRoot) continue;
      mount(host, { token: host.dataset.token, endpoint: host.dataset.endpoint, locale: host.dataset.locale });
    }
  }

  window.BillAssistant = { mount, readEvents }; // the console's page reads its stream with readEvents too
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", mountAll);
  else mountAll();
})();
