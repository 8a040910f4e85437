// Forms that show they are working, and are not sent twice or without a second thought.
// Every POST form: the pressed button says it is working (the form's data-busy text, or the
// page's own word for it, #busy-words) with aria-busy, and the form's buttons are disabled
// right after the request leaves, so a slow action (a hold over thousands of versions, S3
// credentials, a password check) shows at once that it is under way and a second click sends
// nothing. data-busy="no" leaves a form as it is. data-once: a second submit of the same form
// is ignored as well (a double click on Approve applies a proposal once; the server refuses a
// second time too). data-confirm: an action that cannot be undone asks first.
(function () {
  "use strict";

  function word() {
    var words = document.getElementById("busy-words");
    return (words && words.dataset.textBusy) || "…";
  }

  function pressed(form, event) {
    var submitter = event.submitter;
    if (submitter && submitter.type === "submit" && submitter.form === form) { return submitter; }
    return form.querySelector("button[type=submit], button:not([type])");
  }

  document.addEventListener("submit", function (event) {
    var form = event.target;
    if (!form.dataset || event.defaultPrevented) { return; }  // refused before it left
    if (form.dataset.confirm && !window.confirm(form.dataset.confirm)) {
      event.preventDefault();
      return;
    }
    if (form.dataset.once !== undefined) {
      if (form.dataset.sent) { event.preventDefault(); return; }
      form.dataset.sent = "1";
    }
    var post = (form.getAttribute("method") || "").toLowerCase() === "post";
    if (form.dataset.once === undefined && (!post || form.dataset.busy === "no")) { return; }
    var button = pressed(form, event);
    if (post && form.dataset.busy !== "no" && button && !button.disabled) {
      // A button its own script already set working (the editor's Save) keeps its words.
      button.dataset.idleText = button.textContent;
      button.textContent = button.dataset.busy || form.dataset.busy || word();
      button.setAttribute("aria-busy", "true");
      form.setAttribute("aria-busy", "true");
    }
    // After this event, so the pressed button's name and value are still sent.
    window.setTimeout(function () {
      form.querySelectorAll("button[type=submit], button:not([type])").forEach(function (b) {
        if (!b.disabled) { b.disabled = true; b.dataset.busyDisabled = "1"; }
      });
    }, 0);
  });

  // Back to a page the browser kept (the back button): its forms work again.
  window.addEventListener("pageshow", function (event) {
    if (!event.persisted) { return; }
    document.querySelectorAll("form[aria-busy], form[data-sent]").forEach(function (form) {
      form.removeAttribute("aria-busy");
      delete form.dataset.sent;
      form.querySelectorAll("button").forEach(function (b) {
        if (b.dataset.idleText !== undefined) {
          b.textContent = b.dataset.idleText;
          delete b.dataset.idleText;
          b.removeAttribute("aria-busy");
        }
        if (b.dataset.busyDisabled) {  // only what this script disabled
          b.disabled = false;
          delete b.dataset.busyDisabled;
        }
      });
    });
  });
})();
