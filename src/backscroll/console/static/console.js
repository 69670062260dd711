// Progressive enhancement only: every page works without this file.
"use strict";
document.addEventListener("DOMContentLoaded", () => {
  for (const link of document.querySelectorAll("a[data-back]")) {
    link.addEventListener("click", (event) => {
      if (window.history.length > 1) {
        event.preventDefault();
        window.history.back();
      }
    });
  }
  for (const form of document.querySelectorAll("form[data-confirm]")) {
    form.addEventListener("submit", (event) => {
      if (!window.confirm(form.dataset.confirm)) event.preventDefault();
    });
  }
  const target = document.querySelector("tr.target");
  if (target && !window.location.hash) target.scrollIntoView({ block: "center" });
  const query = document.getElementById("q");
  document.addEventListener("keydown", (event) => {
    if (event.key === "/" && query && document.activeElement !== query) {
      event.preventDefault();
      query.focus();
    }
  });
});
