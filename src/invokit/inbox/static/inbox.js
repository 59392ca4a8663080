// The invokit inbox: live updates and remaining lifetimes. Served as a file: the page's
// Content-Security-Policy allows no inline script. Everything inserted comes from the
// server's own escaped HTML fragment.
"use strict";

(function () {
  const section = document.getElementById("questions");
  if (!section) {
    return;
  }
  const live = document.getElementById("live");

  function tick() {
    const now = Date.now() / 1000;
    for (const el of document.querySelectorAll(".expires")) {
      const left = Math.max(0, Number(el.dataset.expires) - now);
      const minutes = Math.floor(left / 60);
      const seconds = Math.floor(left % 60);
      el.textContent = left > 0 ? `expires in ${minutes} min ${seconds} s` : "expired";
    }
  }

  async function refresh() {
    const response = await fetch("/inbox/fragment", { credentials: "same-origin" });
    if (response.status === 401) {
      window.location.assign("/inbox");
      return;
    }
    if (response.ok) {
      section.innerHTML = await response.text();
      tick();
    }
  }

  const events = new EventSource("/inbox/events");
  events.addEventListener("changed", () => { refresh(); });
  events.addEventListener("open", () => {
    if (live) { live.textContent = "Live: new questions appear here."; }
  });
  events.addEventListener("error", () => {
    if (live) { live.textContent = "Live updates interrupted; reconnecting..."; }
  });
  tick();
  window.setInterval(tick, 1000);
})();
