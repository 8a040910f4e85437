// A subject request's background job (finding what is held, the package, the erasure): while
// it is queued or running, ask the server every few seconds where it stands, and show the page
// again once it is done, so the result appears without a reload by hand (nothing typed is lost
// before then: the page is only reloaded when the job has finished).
(function () {
  "use strict";
  var box = document.getElementById("job-status");
  if (!box || !box.dataset.poll) { return; }
  var url = box.dataset.poll;
  function ask() {
    fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (response) { return response.ok ? response.json() : null; })
      .then(function (status) {
        if (status && status.running) {
          window.setTimeout(ask, 3000);
        } else if (status) {
          window.location.reload();
        }
      })
      .catch(function () { window.setTimeout(ask, 10000); });
  }
  window.setTimeout(ask, 2000);
})();
