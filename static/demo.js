/* The demo page's running state. After "Analyse" the result's heading takes the focus and the page scrolls to it
   (the result starts below the fold, on a phone a screen further down); while the analysis streams, a line says
   how long it has been running and how many steps are left. The steps themselves and the announcements come from
   the server (templates/_result.html: stages, announce). Without JavaScript the page posts and shows the result. */
(function () {
  "use strict";

  function say(text) {
    const region = document.getElementById("announce");
    if (region) region.textContent = text;
  }

  let tick = () => {};

  function follow(section) {
    const elapsed = section.querySelector("#elapsed");
    const done = section.querySelector("#done");
    if (!elapsed || !done) return;
    const started = Date.now();
    tick = () => {
      if (!section.isConnected || done.textContent.trim()) {
        clearInterval(timer);
        section.removeAttribute("aria-busy");
        elapsed.hidden = true; // "Finished in … ms" says the rest
        return;
      }
      const steps = section.querySelectorAll(".stages .stage");
      const left = section.querySelectorAll(".stages .stage.pending, .stages .stage.running").length;
      const seconds = Math.round((Date.now() - started) / 1000);
      // the words come from the page, in its language (templates/_analysis.html, web/locales)
      const values = { seconds: seconds, left: left, total: steps.length };
      const words = elapsed.dataset.words || "Running for {seconds} s · {left} of {total} steps left";
      elapsed.textContent = words.replace(/\{(seconds|left|total)\}/g, (_, name) => String(values[name]));
    };
    const timer = setInterval(tick, 1000);
    tick();
  }

  // a streamed message has been swapped in (htmx:afterSwap is not sent for these)
  document.addEventListener("htmx:sseMessage", () => tick());
  document.addEventListener("htmx:oobAfterSwap", () => tick());
  document.addEventListener("htmx:beforeRequest", (event) => {
    const form = event.detail.elt;
    if (form.matches && form.matches("form.analyse")) say(form.dataset.analysing || "Analysing…");
  });
  document.addEventListener("htmx:afterSwap", (event) => {
    if (event.detail.target.id !== "result") return;
    const section = document.getElementById("result-section");
    const heading = document.getElementById("result-title");
    if (heading) {
      heading.focus({ preventScroll: true });
      heading.scrollIntoView({ block: "start" });
    }
    if (section) follow(section);
  });
  const start = () => {
    const running = document.querySelector("#result-section[aria-busy]");
    if (running) follow(running);
  };
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
