// Keyboard shortcuts for the review pages, and the "saved — undo" toast. The pages work without this file:
// every key stands for a button or link that is already there, so a key only clicks it; the saved message
// stays on the page as a plain message with its undo button.
(function () {
  "use strict";
  var TOAST_SECONDS = 10; // the server allows undo for longer (web.review.UNDO_SECONDS); this is what is shown
  var clicks = { c: "action-confirm", f: "action-flag", n: "action-clear", j: "review-next", k: "review-previous", u: "review-undo" };

  function typing(target) {
    var name = target && target.tagName;
    return name === "TEXTAREA" || name === "INPUT" || name === "SELECT" || (target && target.isContentEditable);
  }

  var flash = document.getElementById("review-flash");
  if (flash) {
    flash.classList.add("toast");
    var undo = document.getElementById("review-undo");
    var timer = window.setTimeout(function () {
      flash.hidden = true;
    }, TOAST_SECONDS * 1000);
    // a moderator reading or reaching for the toast keeps it: the countdown stops while it has focus or the pointer
    var keep = function () {
      window.clearTimeout(timer);
    };
    flash.addEventListener("mouseenter", keep);
    flash.addEventListener("focusin", keep);
    if (undo) undo.setAttribute("aria-keyshortcuts", "u");
  }

  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    if (typing(event.target)) {
      if (event.key === "Escape") event.target.blur();
      return;
    }
    var boxes = { e: "explanation", o: "note" };
    if (boxes[event.key]) {
      var box = document.getElementById(boxes[event.key]);
      if (box) {
        event.preventDefault(); // the key must not land in the box it opens
        box.focus();
      }
      return;
    }
    var target = clicks[event.key] && document.getElementById(clicks[event.key]);
    if (target && !target.closest("[hidden]")) {
      event.preventDefault();
      target.click();
    }
  });
})();
