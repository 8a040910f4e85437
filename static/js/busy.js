// Forms that start long work say so: on submit the button is disabled and its text changes
// to the form's data-busy text, so a second click cannot start the work twice.
(function () {
  "use strict";
  document.addEventListener("submit", function (event) {
    var form = event.target;
    if (!form.dataset || !form.dataset.busy) { return; }
    var button = form.querySelector("button[type=submit]");
    if (button) {
      button.disabled = true;
      button.textContent = form.dataset.busy;
    }
  });
})();
