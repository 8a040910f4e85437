// Forms that must not be sent twice, or not without a second thought. data-busy: on submit the button is disabled and its text
// changes to the form's data-busy text (long work). data-once: a second submit of the same
// form is ignored, and its buttons are disabled right after the first one is sent (a double
// click on Approve applies a proposal once; the server refuses a second time as well).
(function () {
  "use strict";
  document.addEventListener("submit", function (event) {
    var form = event.target;
    if (!form.dataset) { return; }
    // data-confirm: an action that cannot be undone asks first (Cancel sends nothing).
    if (form.dataset.confirm && !window.confirm(form.dataset.confirm)) {
      event.preventDefault();
      return;
    }
    if (form.dataset.once !== undefined) {
      if (form.dataset.sent) { event.preventDefault(); return; }
      form.dataset.sent = "1";
      // After this event, so the pressed button's name and value are still sent.
      window.setTimeout(function () {
        form.querySelectorAll("button[type=submit]").forEach(function (button) {
          button.disabled = true;
        });
      }, 0);
    }
    if (!form.dataset.busy) { return; }
    var button = form.querySelector("button[type=submit]");
    if (button) {
      button.disabled = true;
      button.textContent = form.dataset.busy;
    }
  });
})();
