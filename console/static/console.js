// intake console: copy buttons, confirmations and an optional auto-refresh.
// Pages work without it.
"use strict";

document.addEventListener("click", (ev) => {
  const btn = ev.target.closest("button.copy");
  if (!btn) return;
  const src = document.querySelector(btn.dataset.copy);
  if (!src) return;
  const text = src.textContent;
  const done = () => {
    const label = btn.textContent;
    btn.textContent = "Copied";
    btn.classList.add("done");
    setTimeout(() => { btn.textContent = label; btn.classList.remove("done"); }, 1500);
  };
  if (navigator.clipboard && window.isSecureContext) {
    navigator.clipboard.writeText(text).then(done, () => select(src));
  } else {
    select(src);
    try { document.execCommand("copy"); done(); } catch (e) { /* the text stays selected to copy by hand */ }
  }
});

function select(el) {
  const range = document.createRange();
  range.selectNodeContents(el);
  const sel = window.getSelection();
  sel.removeAllRanges();
  sel.addRange(range);
}

document.addEventListener("submit", (ev) => {
  const msg = ev.target.dataset.confirm;
  if (msg && !window.confirm(msg)) ev.preventDefault();
});

// Auto-refresh: a list reloads every 5 s while its box is ticked; the
// choice is remembered per page.
document.addEventListener("DOMContentLoaded", () => {
  const box = document.querySelector("input[data-autorefresh]");
  if (!box) return;
  const key = "intake.autorefresh." + location.pathname;
  box.checked = localStorage.getItem(key) === "1";
  let timer = null;
  const arm = () => {
    clearTimeout(timer);
    if (box.checked) timer = setTimeout(() => location.reload(), 5000);
  };
  box.addEventListener("change", () => {
    localStorage.setItem(key, box.checked ? "1" : "0");
    arm();
  });
  arm();
});
