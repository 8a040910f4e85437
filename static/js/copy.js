// Copy buttons for secrets shown once (a new runner token, S3 credentials, a set-password
// link): <button type="button" data-copy="ID" data-copy-status="STATUS_ID" hidden> copies the
// text of the element ID (a <pre> or <code>) and says so in STATUS_ID, a role=status
// element, so screen readers announce it. The buttons stay hidden where there is no script
// or no clipboard (plain-HTTP pages other than localhost): the text is still selectable.
(function () {
  "use strict";
  if (!navigator.clipboard) { return; }
  document.querySelectorAll("button[data-copy]").forEach(function (button) {
    var target = document.getElementById(button.dataset.copy);
    var status = document.getElementById(button.dataset.copyStatus);
    if (!target || !status) { return; }
    button.hidden = false;
    button.addEventListener("click", function () {
      var text = target.textContent;
      status.textContent = "";  // a second click is announced again
      navigator.clipboard.writeText(text.trim()).then(function () {
        status.textContent = button.dataset.textCopied;
      }, function () {
        status.textContent = button.dataset.textRefused;
        var range = document.createRange();  // selected, ready for Ctrl+C
        range.selectNodeContents(target);
        window.getSelection().removeAllRanges();
        window.getSelection().addRange(range);
      });
    });
  });
})();
