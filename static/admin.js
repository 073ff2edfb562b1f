// The admin pages' copy buttons. Without this file the snippet is still there to select and copy by hand, so
// the buttons stay hidden until it runs. A static file because the pages' CSP allows no inline script.
// The words it shows come from the button (data-copied, data-select), in the page's language.
(function () {
  "use strict";
  document.querySelectorAll("button.copy[data-copy]").forEach(function (button) {
    var source = document.getElementById(button.getAttribute("data-copy"));
    var status = button.parentNode.querySelector(".copied");
    if (!source) return;
    button.hidden = false;
    button.addEventListener("click", function () {
      var text = source.textContent;
      function said(message) {
        if (status) status.textContent = message;
      }
      function byHand() {
        // older browsers, or no clipboard permission: select the snippet so Ctrl+C copies it
        var range = document.createRange();
        range.selectNodeContents(source);
        var selection = window.getSelection();
        selection.removeAllRanges();
        selection.addRange(range);
        said(button.getAttribute("data-select") || "Selected: press Ctrl+C (⌘C) to copy.");
      }
      if (navigator.clipboard && navigator.clipboard.writeText) {
        navigator.clipboard.writeText(text).then(function () { said(button.getAttribute("data-copied") || "Copied."); }, byHand);
      } else {
        byHand();
      }
    });
  });
})();
