/*
 * The console's one piece of JavaScript: the ask form streams its answer into the page (the same
 * events as the chat widget, read with BillAssistant.readEvents from widget.js), then links to the
 * audited answer's page. Without JavaScript the form posts and the answer page follows.
 */
(() => {
  "use strict";

  const form = document.querySelector("form[data-stream]");
  if (!form || !window.BillAssistant) return;
  const live = document.getElementById("live");
  const status = document.getElementById("live-status");
  const answer = document.getElementById("live-answer");
  const note = document.getElementById("live-note");
  const details = document.getElementById("live-details");
  const submit = form.querySelector("button[type=submit]");

  function refused(response) {
    const wait = response.headers.get("Retry-After") || "a few";
    switch (response.status) {
      case 400: return "The question was not asked: check it and try again.";
      case 403: return "The form was refused (its security token is stale): reload the page and ask again.";
      case 429: return `This bank is asking faster than its limit allows: try again in ${wait} s.`;
      case 503: return `The engine is busy: try again in ${wait} s.`;
      default: return `The question was not answered (HTTP ${response.status}).`;
    }
  }

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    live.hidden = false;
    answer.textContent = "";
    note.textContent = "";
    details.hidden = true;
    status.textContent = "Asking…";
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
        if (name === "facts") status.textContent = "Writing…";
        else if (name === "delta") answer.append(data.text);
        else if (name === "replace") {
          answer.textContent = data.text;
          note.textContent = `The model's answer failed validation (${data.reason}); the deterministic answer replaced it.`;
        } else if (name === "final") {
          answer.textContent = data.explanation;
          status.textContent = `Answered (source: ${data.source}).`;
        } else if (name === "answer_page") {
          details.href = data.url;
          details.hidden = false;
        }
      }
    } catch {
      status.textContent = "The connection was lost before the answer was complete.";
    } finally {
      submit.disabled = false;
    }
  });
})();
