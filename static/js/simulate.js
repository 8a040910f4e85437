// Simulate view: the budget bar's widths (set here, since the CSP allows no inline styles)
// and the copy button (its messages come translated in data-text-* attributes).
(function () {
  "use strict";
  document.querySelectorAll(".budget-part").forEach(function (part) {
    part.style.width = Math.min(100, parseFloat(part.dataset.width) || 0) + "%";
  });
  var button = document.getElementById("copy-prompt");
  if (!button) { return; }
  var status = document.getElementById("copy-status");
  button.addEventListener("click", function () {
    var text = document.getElementById(button.dataset.target).textContent;
    navigator.clipboard.writeText(text).then(function () {
      status.textContent = button.dataset.textCopied.replace(
        "{count}", text.length.toLocaleString(document.documentElement.lang || undefined));
    }, function () {
      status.textContent = button.dataset.textRefused;
    });
  });
})();
