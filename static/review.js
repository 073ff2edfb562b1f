// Keyboard shortcuts for a review item. The page works without this file: every key stands for a button or
// link that is already there, so a key only clicks it.
(function () {
  "use strict";
  var clicks = { c: "action-confirm", f: "action-flag", n: "action-clear", j: "review-next", k: "review-previous" };

  function typing(target) {
    var name = target && target.tagName;
    return name === "TEXTAREA" || name === "INPUT" || name === "SELECT" || (target && target.isContentEditable);
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
    if (target) {
      event.preventDefault();
      target.click();
    }
  });
})();
